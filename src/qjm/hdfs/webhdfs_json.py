"""WebHDFS's JSON and parameters (design §W), as HDFS's JsonUtil and web.resources shape them.

Pure functions shared by the NameNode's and the DataNode's `/webhdfs/v1` handlers: the JSON
bodies of each answer, HDFS's RemoteException error body with its HTTP status (HDFS's
ExceptionHandler), the MD5-of-MD5-of-CRC32C file checksum, and the checks of each query
parameter (a bad value is an IllegalArgumentException naming the parameter, as HDFS's
ParamException says it).
"""

from __future__ import annotations

import hashlib
import struct
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from qjm.hdfs.proto import hdfs_pb2 as hdfs

PREFIX = "/webhdfs/v1"
DEFAULT_USER = "dr.who"  # hadoop.http.staticuser.user: the caller without user.name=
LONG_MAX = (1 << 63) - 1
BYTES_PER_CRC = 512

ILLEGAL_ARGUMENT = "java.lang.IllegalArgumentException"
FILE_NOT_FOUND = "java.io.FileNotFoundException"
IO_EXCEPTION = "java.io.IOException"
UNSUPPORTED = "java.lang.UnsupportedOperationException"
SECURITY = "java.lang.SecurityException"

# The ops of each HTTP method, as HDFS's GetOpParam, PutOpParam, PostOpParam, DeleteOpParam.
OPS: dict[str, tuple[str, str]] = {
    "GET": ("GetOpParam", "OPEN GETFILESTATUS LISTSTATUS LISTSTATUS_BATCH GETCONTENTSUMMARY "
            "GETFILECHECKSUM GETHOMEDIRECTORY GETDELEGATIONTOKEN GETSERVERDEFAULTS"),
    "PUT": ("PutOpParam", "CREATE MKDIRS RENAME SETREPLICATION SETOWNER SETPERMISSION SETTIMES"),
    "POST": ("PostOpParam", "APPEND CONCAT TRUNCATE"),
    "DELETE": ("DeleteOpParam", "DELETE"),
}  # fmt: skip


class WebHdfsError(Exception):
    """A refusal with the Java exception class a WebHDFS client expects."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(message)
        self.java_class = java_class


class ParamError(WebHdfsError):
    """A query parameter without a valid value (HDFS's ParamException, a 400)."""

    def __init__(self, name: str, value: str, why: str) -> None:
        shown = value if len(value) <= 200 else value[:200] + "..."
        super().__init__(
            ILLEGAL_ARGUMENT,
            f'Invalid value for webhdfs parameter "{name}": {why} (value {shown!r})',
        )


# -- errors -----------------------------------------------------------------------------------

_BAD_REQUEST = {
    ILLEGAL_ARGUMENT,
    UNSUPPORTED,
    "org.apache.hadoop.HadoopIllegalArgumentException",
    "org.apache.hadoop.fs.InvalidPathException",  # an IllegalArgumentException in Hadoop
}
_FORBIDDEN = {SECURITY, "org.apache.hadoop.security.authorize.AuthorizationException"}
_NOT_IO = {"java.lang.RuntimeException", "java.lang.NullPointerException"}


def http_status(java_class: str) -> int:
    """The HTTP status HDFS's ExceptionHandler gives an exception: 404 FileNotFound, 400 an
    IllegalArgument or UnsupportedOperation, 500 a runtime error, else 403 (every
    IOException: AccessControl, Standby, FileAlreadyExists, ...)."""
    if java_class == FILE_NOT_FOUND:
        return 404
    if java_class in _BAD_REQUEST:
        return 400
    if java_class in _FORBIDDEN:
        return 403
    if java_class in _NOT_IO:
        return 500
    return 403


def remote_exception(java_class: str, message: str) -> dict[str, Any]:
    """HDFS's error body: {"RemoteException": {exception, javaClassName, message}}."""
    return {
        "RemoteException": {
            "exception": java_class.rsplit(".", 1)[-1],
            "javaClassName": java_class,
            "message": message,
        }
    }


# -- answers ----------------------------------------------------------------------------------

_TYPES = {
    hdfs.HdfsFileStatusProto.IS_DIR: "DIRECTORY",
    hdfs.HdfsFileStatusProto.IS_FILE: "FILE",
    hdfs.HdfsFileStatusProto.IS_SYMLINK: "SYMLINK",
}


def permission_string(perm: int) -> str:
    """FsPermission as JsonUtil writes it: octal without a leading zero, sticky bit kept."""
    return format(perm & 0o1777, "o")


def file_status_json(status: hdfs.HdfsFileStatusProto) -> dict[str, Any]:
    """One FileStatus object (JsonUtil.toJsonMap of an HdfsFileStatus)."""
    out: dict[str, Any] = {
        "accessTime": status.access_time,
        "blockSize": status.blocksize,
        "childrenNum": status.childrenNum,
        "fileId": status.fileId,
        "group": status.group,
        "length": status.length,
        "modificationTime": status.modification_time,
        "owner": status.owner,
        "pathSuffix": status.path.decode("utf-8", errors="replace"),
        "permission": permission_string(status.permission.perm),
        "replication": status.block_replication,
        "storagePolicy": status.storagePolicy,
        "type": _TYPES.get(status.fileType, "FILE"),
    }
    if status.HasField("symlink"):
        out["symlink"] = status.symlink.decode("utf-8", errors="replace")
    return out


def file_status_body(status: hdfs.HdfsFileStatusProto) -> dict[str, Any]:
    """GETFILESTATUS's answer."""
    return {"FileStatus": file_status_json(status)}


def list_status_body(entries: Sequence[hdfs.HdfsFileStatusProto]) -> dict[str, Any]:
    """LISTSTATUS's answer."""
    return {"FileStatuses": {"FileStatus": [file_status_json(e) for e in entries]}}


def list_batch_body(entries: Sequence[hdfs.HdfsFileStatusProto], remaining: int) -> dict[str, Any]:
    """LISTSTATUS_BATCH's answer: a page and how many entries are left after it."""
    return {
        "DirectoryListing": {
            "partialListing": {
                "FileStatuses": {"FileStatus": [file_status_json(e) for e in entries]}
            },
            "remainingEntries": remaining,
        }
    }


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def content_summary_body(summary: hdfs.ContentSummaryProto) -> dict[str, Any]:
    """GETCONTENTSUMMARY's answer (quotas of none as -1)."""
    return {
        "ContentSummary": {
            "directoryCount": summary.directoryCount,
            "ecPolicy": "",
            "fileCount": summary.fileCount,
            "length": summary.length,
            "quota": _signed(summary.quota),
            "spaceConsumed": summary.spaceConsumed,
            "spaceQuota": _signed(summary.spaceQuota),
            "typeQuota": {},
        }
    }


def server_defaults_body(d: hdfs.FsServerDefaultsProto) -> dict[str, Any]:
    """GETSERVERDEFAULTS's answer."""
    return {
        "FsServerDefaults": {
            "blockSize": d.blockSize,
            "bytesPerChecksum": d.bytesPerChecksum,
            "writePacketSize": d.writePacketSize,
            "replication": d.replication,
            "fileBufferSize": d.fileBufferSize,
            "encryptDataTransfer": d.encryptDataTransfer,
            "trashInterval": d.trashInterval,
            "checksumType": int(d.checksumType),  # DataChecksum.Type's id: 2 is CRC32C
            "keyProviderUri": "",
            "defaultStoragePolicyId": 7,  # HOT
        }
    }


def boolean_body(value: bool) -> dict[str, Any]:
    """MKDIRS, RENAME, DELETE, SETREPLICATION, TRUNCATE's answer."""
    return {"boolean": value}


def home_directory_body(user: str) -> dict[str, Any]:
    """GETHOMEDIRECTORY's answer."""
    return {"Path": f"/user/{user}"}


@dataclass(frozen=True)
class BlockSum:
    """One block's BLOCK_CHECKSUM answer: bytes per CRC, CRCs per block, the MD5 of its CRCs."""

    bytes_per_crc: int
    crc_per_block: int
    md5: bytes


def file_checksum(blocks: Sequence[BlockSum]) -> tuple[str, bytes]:
    """HDFS's MD5MD5CRC32C file checksum of a file's block checksums: its algorithm name and
    its bytes (bytesPerCRC, crcPerBlock, MD5 of the block MD5s), as FileChecksumHelper makes
    them: crcPerBlock is the first block's when there are several, else 0; the MD5 is of the
    client's whole output buffer (32 bytes, doubled as it fills), zeros after the MD5s; an
    empty file's is MD5-of-0MD5-of-0CRC32."""
    bpc = blocks[0].bytes_per_crc if blocks else 0
    crc_per_block = blocks[0].crc_per_block if len(blocks) > 1 else 0
    md5s = b"".join(b.md5 for b in blocks)
    capacity = 32
    while capacity < len(md5s):
        capacity *= 2
    digest = hashlib.md5(md5s + bytes(capacity - len(md5s)), usedforsecurity=False).digest()
    # a file without blocks gets HDFS's CRC32 (gzip) variant: no block named a CRC type
    name = f"MD5-of-{crc_per_block}MD5-of-{bpc}{'CRC32C' if blocks else 'CRC32'}"
    return name, struct.pack(">IQ", bpc, crc_per_block) + digest


def file_checksum_body(algorithm: str, raw: bytes) -> dict[str, Any]:
    """GETFILECHECKSUM's answer."""
    return {"FileChecksum": {"algorithm": algorithm, "bytes": raw.hex(), "length": len(raw)}}


# -- the request ------------------------------------------------------------------------------


def op_of(method: str, query: Mapping[str, str]) -> str:
    """The op of a request, checked against its HTTP method as HDFS's op enums do."""
    if method not in OPS:
        raise WebHdfsError(UNSUPPORTED, f"WebHDFS does not answer HTTP {method}")
    enum, names = OPS[method]
    raw = query.get("op")
    if raw is None or not raw.strip():
        raise WebHdfsError(ILLEGAL_ARGUMENT, 'Invalid value for webhdfs parameter "op": missing')
    op = raw.strip().upper()
    if op not in names.split():
        shown = raw if len(raw) <= 100 else raw[:100] + "..."
        raise WebHdfsError(
            ILLEGAL_ARGUMENT,
            f'Invalid value for webhdfs parameter "op": No enum constant '
            f"org.apache.hadoop.hdfs.web.resources.{enum}.Op.{shown}",
        )
    return op


def path_of(raw_path: str) -> str:
    """The HDFS path of a request's raw (still percent-encoded) path under /webhdfs/v1:
    decoded as UTF-8 (an IllegalArgumentException when it is not)."""
    rest = raw_path.split("?", 1)[0][len(PREFIX) :]
    try:
        path = urllib.parse.unquote_to_bytes(rest).decode("utf-8")
    except UnicodeDecodeError:
        raise WebHdfsError(ILLEGAL_ARGUMENT, "the path is not valid UTF-8") from None
    if "\x00" in path:
        raise WebHdfsError(ILLEGAL_ARGUMENT, "the path holds a NUL character")
    return path if path.startswith("/") else "/" + path


def query_of(raw_path: str) -> dict[str, str]:
    """A request's query parameters, decoded as UTF-8 (an IllegalArgumentException naming
    the parameter when one is not); a parameter given twice keeps its first value."""
    raw = raw_path.split("?", 1)[1] if "?" in raw_path else ""
    out: dict[str, str] = {}
    for part in raw.split("&"):
        if not part:
            continue
        name_raw, _, value_raw = part.partition("=")
        try:
            name = urllib.parse.unquote_plus(name_raw, errors="strict")
        except UnicodeDecodeError:
            raise WebHdfsError(ILLEGAL_ARGUMENT, "a parameter name is not valid UTF-8") from None
        try:
            value = urllib.parse.unquote_plus(value_raw, errors="strict")
        except UnicodeDecodeError:
            raise ParamError(name, value_raw, "not valid UTF-8") from None
        if "\x00" in value:
            raise ParamError(name, value_raw, "holds a NUL character")
        out.setdefault(name, value)
    return out


def long_param(
    query: Mapping[str, str], name: str, default: int, *, low: int = 0, high: int = LONG_MAX
) -> int:
    """A Java long parameter within [low, high], default when absent."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        raise ParamError(name, raw, "not a decimal number") from None
    if not low <= value <= high:
        raise ParamError(name, raw, f"out of range [{low}, {high}]")
    return value


def bool_param(query: Mapping[str, str], name: str, default: bool) -> bool:
    """A true/false parameter, default when absent."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ParamError(name, raw, "neither true nor false")
    return value == "true"


def permission_param(query: Mapping[str, str], name: str, default: int) -> int:
    """An octal permission parameter (0..1777), default when absent."""
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw.strip(), 8)
    except ValueError:
        raise ParamError(name, raw, "not an octal permission") from None
    if not 0 <= value <= 0o1777:
        raise ParamError(name, raw, "out of range [0, 1777]")
    return value


def path_param(query: Mapping[str, str], name: str) -> str:
    """A required absolute path parameter (RENAME's destination)."""
    raw = query.get(name)
    if raw is None or raw == "":
        raise ParamError(name, "", "missing")
    if not raw.startswith("/"):
        raise ParamError(name, raw, "not an absolute path")
    return raw


def redirect_query(op: str, user: str, params: Mapping[str, str]) -> str:
    """The query string of a redirect to a DataNode: op, user.name, then params sorted."""
    items = [("op", op), ("user.name", user), *sorted(params.items())]
    return urllib.parse.urlencode(items, quote_via=urllib.parse.quote)


def quote_path(path: str) -> str:
    """An HDFS path as a URL path (each segment percent-encoded, the slashes kept)."""
    return urllib.parse.quote(path, safe="/")
