"""qjm.ha."""
