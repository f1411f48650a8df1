"""qjm.namenode."""
