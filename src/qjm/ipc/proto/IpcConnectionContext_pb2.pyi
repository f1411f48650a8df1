from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class UserInformationProto(_message.Message):
    __slots__ = ("effectiveUser", "realUser")
    EFFECTIVEUSER_FIELD_NUMBER: _ClassVar[int]
    REALUSER_FIELD_NUMBER: _ClassVar[int]
    effectiveUser: str
    realUser: str
    def __init__(self, effectiveUser: _Optional[str] = ..., realUser: _Optional[str] = ...) -> None: ...

class IpcConnectionContextProto(_message.Message):
    __slots__ = ("userInfo", "protocol")
    USERINFO_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    userInfo: UserInformationProto
    protocol: str
    def __init__(self, userInfo: _Optional[_Union[UserInformationProto, _Mapping]] = ..., protocol: _Optional[str] = ...) -> None: ...
