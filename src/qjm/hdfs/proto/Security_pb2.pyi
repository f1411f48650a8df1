from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class TokenProto(_message.Message):
    __slots__ = ("identifier", "password", "kind", "service")
    IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    identifier: bytes
    password: bytes
    kind: str
    service: str
    def __init__(self, identifier: _Optional[bytes] = ..., password: _Optional[bytes] = ..., kind: _Optional[str] = ..., service: _Optional[str] = ...) -> None: ...
