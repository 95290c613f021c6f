"""Task grades (CONTRACT sections 2 and 4): validation and scoring."""
