"""qjm.editlog."""
