"""Errors with messages meant for operators: each names the values that were wrong."""

from __future__ import annotations


class QjmError(Exception):
    """Base class: an expected failure whose message is shown to an operator as is."""

    @property
    def brief(self) -> str:
        """The message without the peer and method that a caller naming them already shows."""
        return str(self)


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


def describe_error(exc: BaseException, *, brief: bool = False, drop_prefix: str = "") -> str:
    """An error on one line, as a log line, a status or a report shows it.

    A qjm error reads as its message (its brief form when brief), a timeout as "timed out",
    an OS error as its reason and file, anything else with its type's name first; a leading
    drop_prefix (a name the caller already shows) is left out.
    """
    if isinstance(exc, QjmError):
        text = exc.brief if brief else str(exc)
    elif isinstance(exc, TimeoutError):
        text = "timed out"
    elif isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    text = " ".join(text.split())
    if drop_prefix and text.startswith(drop_prefix):
        return text[len(drop_prefix) :]
    return text
