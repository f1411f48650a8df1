"""qjm.journalnode."""
