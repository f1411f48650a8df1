"""qjm.protocol."""
