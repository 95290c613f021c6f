"""The command line: typer commands and every piece of printing."""
