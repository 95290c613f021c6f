"""Development tools: generators of sample and bench data (not shipped in the wheel)."""
