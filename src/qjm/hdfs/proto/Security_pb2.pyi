from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

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

class GetDelegationTokenRequestProto(_message.Message):
    __slots__ = ("renewer",)
    RENEWER_FIELD_NUMBER: _ClassVar[int]
    renewer: str
    def __init__(self, renewer: _Optional[str] = ...) -> None: ...

class GetDelegationTokenResponseProto(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: TokenProto
    def __init__(self, token: _Optional[_Union[TokenProto, _Mapping]] = ...) -> None: ...

class RenewDelegationTokenRequestProto(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: TokenProto
    def __init__(self, token: _Optional[_Union[TokenProto, _Mapping]] = ...) -> None: ...

class RenewDelegationTokenResponseProto(_message.Message):
    __slots__ = ("newExpiryTime",)
    NEWEXPIRYTIME_FIELD_NUMBER: _ClassVar[int]
    newExpiryTime: int
    def __init__(self, newExpiryTime: _Optional[int] = ...) -> None: ...

class CancelDelegationTokenRequestProto(_message.Message):
    __slots__ = ("token",)
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    token: TokenProto
    def __init__(self, token: _Optional[_Union[TokenProto, _Mapping]] = ...) -> None: ...

class CancelDelegationTokenResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
