"""HDFS's shared wire types: the messages and codecs that NameNodes, DataNodes and clients
all speak (our own .proto files with Hadoop's names and numbers, and pure conversions)."""
