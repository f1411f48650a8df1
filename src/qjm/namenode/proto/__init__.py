"""HDFS's NameNode messages (client and HA protocols): our own .proto files, Hadoop's numbers."""
