"""HDFS's shared messages: our own .proto files, Hadoop's message names and field numbers."""
