"""qjm.cli."""
