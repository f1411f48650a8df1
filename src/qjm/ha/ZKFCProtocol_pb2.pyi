from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class CedeActiveRequestProto(_message.Message):
    __slots__ = ("millisToCede",)
    MILLISTOCEDE_FIELD_NUMBER: _ClassVar[int]
    millisToCede: int
    def __init__(self, millisToCede: _Optional[int] = ...) -> None: ...

class CedeActiveResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GracefulFailoverRequestProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GracefulFailoverResponseProto(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
