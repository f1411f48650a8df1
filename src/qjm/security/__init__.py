"""Kerberos for qjm: principal names and their rules, and the SASL GSSAPI mechanism."""
