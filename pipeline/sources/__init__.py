"""Where inputs come from: files of task and surface grades, and Inspect AI eval logs."""
