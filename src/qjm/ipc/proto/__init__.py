"""Hadoop's RPC header messages: our own .proto files with Hadoop's field numbers."""
