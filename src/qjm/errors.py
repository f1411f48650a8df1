"""Errors with messages meant for operators: each names the values that were wrong."""

from __future__ import annotations


class QjmError(Exception):
    """Base class: an expected failure whose message is shown to an operator as is."""


class ConfigError(QjmError):
    """A configuration file or flag is missing, malformed or out of range."""


class EditLogError(QjmError):
    """An edit-log file or batch that cannot be read as HDFS framing."""


class CorruptOpError(EditLogError):
    """An op whose framing or checksum is wrong, located by txid and offset."""

    def __init__(self, message: str, *, offset: int, txid: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset
        self.txid = txid


def describe_error(exc: BaseException) -> str:
    """An error as a log line or status shows it: a qjm error by its message, any other
    exception with its type's name first."""
    return str(exc) if isinstance(exc, QjmError) else f"{type(exc).__name__}: {exc}"
