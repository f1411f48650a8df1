"""The DataNode: block storage, the DataXceiver (DataTransferProtocol) and its NameNode actors."""
