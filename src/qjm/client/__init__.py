"""qjm.client."""
