from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class RequestHeaderProto(_message.Message):
    __slots__ = ("methodName", "declaringClassProtocolName", "clientProtocolVersion")
    METHODNAME_FIELD_NUMBER: _ClassVar[int]
    DECLARINGCLASSPROTOCOLNAME_FIELD_NUMBER: _ClassVar[int]
    CLIENTPROTOCOLVERSION_FIELD_NUMBER: _ClassVar[int]
    methodName: str
    declaringClassProtocolName: str
    clientProtocolVersion: int
    def __init__(self, methodName: _Optional[str] = ..., declaringClassProtocolName: _Optional[str] = ..., clientProtocolVersion: _Optional[int] = ...) -> None: ...
