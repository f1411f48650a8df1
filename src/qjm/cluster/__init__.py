"""qjm.cluster."""
