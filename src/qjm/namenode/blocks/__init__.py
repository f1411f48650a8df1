"""The NameNode's block management: DataNodes, the block map, placement, safe mode.

Pure state machines (design §B.5-§B.8); the RPC layer and the server call them.
"""
