"""qjm: HDFS-style NameNode high availability on a Quorum Journal."""

__version__ = "0.1.0"
