from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ActiveNodeInfo(_message.Message):
    __slots__ = ("nameserviceId", "namenodeId", "hostname", "port", "zkfcPort")
    NAMESERVICEID_FIELD_NUMBER: _ClassVar[int]
    NAMENODEID_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    ZKFCPORT_FIELD_NUMBER: _ClassVar[int]
    nameserviceId: str
    namenodeId: str
    hostname: str
    port: int
    zkfcPort: int
    def __init__(self, nameserviceId: _Optional[str] = ..., namenodeId: _Optional[str] = ..., hostname: _Optional[str] = ..., port: _Optional[int] = ..., zkfcPort: _Optional[int] = ...) -> None: ...
