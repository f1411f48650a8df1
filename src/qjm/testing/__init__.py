"""Test support shipped with the package: an in-process transport to real JournalNodes."""
