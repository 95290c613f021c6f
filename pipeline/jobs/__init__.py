"""One module per command, wiring the stages together; I/O at the edges."""
