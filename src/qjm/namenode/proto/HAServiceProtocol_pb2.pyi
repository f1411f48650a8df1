from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HAServiceStateProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INITIALIZING: _ClassVar[HAServiceStateProto]
    ACTIVE: _ClassVar[HAServiceStateProto]
    STANDBY: _ClassVar[HAServiceStateProto]
    OBSERVER: _ClassVar[HAServiceStateProto]

class HARequestSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REQUEST_BY_USER: _ClassVar[HARequestSource]
    REQUEST_BY_USER_FORCED: _ClassVar[HARequestSource]
    REQUEST_BY_ZKFC: _ClassVar[HARequestSource]
INITIALIZING: HAServiceStateProto
ACTIVE: HAServiceStateProto
STANDBY: HAServiceStateProto
OBSERVER: HAServiceStateProto
REQUEST_BY_USER: HARequestSource
REQUEST_BY_USER_FORCED: HARequestSource
REQUEST_BY_ZKFC: HARequestSource

class HAStateChangeRequestInfoProto(_message.Message):
    __slots__ = ("reqSource",)
    REQSOURCE_FIELD_NUMBER: _ClassVar[int]
    reqSource: HARequestSource
    def __init__(self, reqSource: _Optional[_Union[HARequestSource, str]] = ...) -> None: ...

class MonitorHealthRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class MonitorHealthResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TransitionToActiveRequestProto(_message.Message):
    __slots__ = ("reqInfo",)
    REQINFO_FIELD_NUMBER: _ClassVar[int]
    reqInfo: HAStateChangeRequestInfoProto
    def __init__(self, reqInfo: _Optional[_Union[HAStateChangeRequestInfoProto, _Mapping]] = ...) -> None: ...

class TransitionToActiveResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TransitionToStandbyRequestProto(_message.Message):
    __slots__ = ("reqInfo",)
    REQINFO_FIELD_NUMBER: _ClassVar[int]
    reqInfo: HAStateChangeRequestInfoProto
    def __init__(self, reqInfo: _Optional[_Union[HAStateChangeRequestInfoProto, _Mapping]] = ...) -> None: ...

class TransitionToStandbyResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServiceStatusRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServiceStatusResponseProto(_message.Message):
    __slots__ = ("state", "readyToBecomeActive", "notReadyReason")
    STATE_FIELD_NUMBER: _ClassVar[int]
    READYTOBECOMEACTIVE_FIELD_NUMBER: _ClassVar[int]
    NOTREADYREASON_FIELD_NUMBER: _ClassVar[int]
    state: HAServiceStateProto
    readyToBecomeActive: bool
    notReadyReason: str
    def __init__(self, state: _Optional[_Union[HAServiceStateProto, str]] = ..., readyToBecomeActive: _Optional[bool] = ..., notReadyReason: _Optional[str] = ...) -> None: ...
