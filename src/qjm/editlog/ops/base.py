"""The Op base class, the opcode registry and the errors of op decoding and encoding."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from qjm.editlog.ops.codec import Reader, Writer
from qjm.editlog.ops.opcodes import opcode_name
from qjm.errors import CorruptOpError, EditLogError


class OpDecodeError(CorruptOpError):
    """An op body that is not a valid HDFS body for its opcode (or an unknown opcode)."""

    def __init__(
        self, message: str, *, offset: int, txid: int | None = None, opcode: int | None = None
    ) -> None:
        super().__init__(message, offset=offset, txid=txid)
        self.opcode = opcode


class OpEncodeError(EditLogError):
    """An op whose field values HDFS's format cannot hold."""


class Op:
    """One edit-log operation of layout -64 (a frozen dataclass per opcode)."""

    __slots__ = ()
    OPCODE: ClassVar[int]

    @property
    def opcode_name(self) -> str:
        """The HDFS name of this op's opcode, e.g. OP_ADD."""
        return opcode_name(self.OPCODE)

    def encode_body(self, w: Writer) -> None:
        """Append the body as HDFS writes it."""
        raise NotImplementedError

    @classmethod
    def decode_body(cls, r: Reader) -> Op:
        """Read a body written by encode_body (or by HDFS)."""
        raise NotImplementedError


OP_CLASSES: dict[int, type[Op]] = {}

_T = TypeVar("_T", bound=type[Op])


def register(cls: _T) -> _T:
    """Class decorator: add an op class to the opcode registry."""
    if cls.OPCODE in OP_CLASSES:
        raise RuntimeError(f"opcode {cls.OPCODE} registered twice")
    OP_CLASSES[cls.OPCODE] = cls
    return cls
