"""Hadoop's token storage file (Credentials, magic `HDTS`): what HADOOP_TOKEN_FILE_LOCATION
names, so a genuine client without a Kerberos ticket authenticates with the delegation
tokens in it (design §S.10). Written in the Writable form (version 0), which every Hadoop
3 release reads; both forms' tokens are read back (version 0 only)."""

from __future__ import annotations

from qjm.editlog.ops.codec import BodyError, Reader, Writer
from qjm.ipc.sasl import TokenCredential

MAGIC = b"HDTS"
WRITABLE_VERSION = 0  # Credentials.OLD_TOKEN_STORAGE_VERSION


class TokenFileError(ValueError):
    """A token storage file that cannot be read."""


def ha_service(nameservice: str) -> str:
    """The service an HA client's token names (HAUtilClient.buildTokenServiceForLogicalUri)."""
    return f"ha-hdfs:{nameservice}"


def _bytes(w: Writer, data: bytes) -> None:
    w.vint(len(data))
    w.raw(data)


def encode_token_file(tokens: list[TokenCredential]) -> bytes:
    """A Credentials file holding tokens, each under its service as alias."""
    w = Writer()
    w.raw(MAGIC)
    w.byte(WRITABLE_VERSION)
    w.vint(len(tokens))
    for t in tokens:
        w.text(t.service)  # the alias
        _bytes(w, t.identifier)
        _bytes(w, t.password)
        w.text(t.kind)
        w.text(t.service)
    w.vint(0)  # no secret keys
    return w.getvalue()


def decode_token_file(data: bytes) -> list[TokenCredential]:
    """The tokens of a Writable-form Credentials file."""
    if not data.startswith(MAGIC):
        raise TokenFileError("not a token storage file: no HDTS magic")
    r = Reader(data, len(MAGIC))
    try:
        version = r.byte()
        if version != WRITABLE_VERSION:
            raise TokenFileError(f"token storage version {version} is not read (only 0)")
        tokens = []
        for _ in range(r.vint()):
            r.text()  # the alias
            identifier = r.raw(r.vint())
            password = r.raw(r.vint())
            tokens.append(TokenCredential(identifier, password, r.text(), r.text()))
        return tokens
    except BodyError as e:
        raise TokenFileError(f"damaged token storage file: {e}") from None
