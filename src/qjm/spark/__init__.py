"""qjm.spark."""
