"""WebHDFS's JSON shapes and parameter checks (qjm.hdfs.webhdfs_json), table by table."""

from __future__ import annotations

import hashlib
import struct

import crc32c
import pytest

from qjm.hdfs import webhdfs_json as wj
from qjm.hdfs.proto import hdfs_pb2 as hdfs


def test_file_status_has_hdfs_fields_and_octal_permission() -> None:
    proto = hdfs.HdfsFileStatusProto(
        fileType=hdfs.HdfsFileStatusProto.IS_FILE,
        path=b"f.txt",
        length=24930,
        permission=hdfs.FsPermissionProto(perm=0o644),
        owner="alice",
        group="supergroup",
        modification_time=1320173277227,
        access_time=1320171722771,
        block_replication=3,
        blocksize=134217728,
        fileId=16387,
        childrenNum=0,
    )
    assert wj.file_status_body(proto) == {
        "FileStatus": {
            "accessTime": 1320171722771,
            "blockSize": 134217728,
            "childrenNum": 0,
            "fileId": 16387,
            "group": "supergroup",
            "length": 24930,
            "modificationTime": 1320173277227,
            "owner": "alice",
            "pathSuffix": "f.txt",
            "permission": "644",
            "replication": 3,
            "storagePolicy": 0,
            "type": "FILE",
        }
    }
    d = hdfs.HdfsFileStatusProto(
        fileType=hdfs.HdfsFileStatusProto.IS_DIR, path=b"", length=0,
        permission=hdfs.FsPermissionProto(perm=0o1777), owner="o", group="g",
        modification_time=1, access_time=0, childrenNum=2,
    )  # fmt: skip
    listed = wj.list_status_body([d])["FileStatuses"]["FileStatus"][0]
    assert (listed["type"], listed["permission"], listed["childrenNum"]) == ("DIRECTORY", "1777", 2)


@pytest.mark.parametrize(
    ("java_class", "status"),
    [
        ("java.io.FileNotFoundException", 404),
        ("org.apache.hadoop.security.AccessControlException", 403),
        ("org.apache.hadoop.ipc.StandbyException", 403),
        ("org.apache.hadoop.fs.FileAlreadyExistsException", 403),
        ("java.io.IOException", 403),
        ("java.lang.IllegalArgumentException", 400),
        ("org.apache.hadoop.HadoopIllegalArgumentException", 400),
        ("java.lang.UnsupportedOperationException", 400),
        ("java.lang.RuntimeException", 500),
    ],
)
def test_http_status_as_hdfs_exception_handler(java_class: str, status: int) -> None:
    assert wj.http_status(java_class) == status


def test_remote_exception_body() -> None:
    assert wj.remote_exception("java.io.FileNotFoundException", "File does not exist: /x") == {
        "RemoteException": {
            "exception": "FileNotFoundException",
            "javaClassName": "java.io.FileNotFoundException",
            "message": "File does not exist: /x",
        }
    }


def test_content_summary_quotas_of_none_are_minus_one() -> None:
    s = hdfs.ContentSummaryProto(
        length=10, fileCount=1, directoryCount=2, quota=(1 << 64) - 1, spaceConsumed=30,
        spaceQuota=(1 << 64) - 1,
    )  # fmt: skip
    body = wj.content_summary_body(s)["ContentSummary"]
    assert (body["quota"], body["spaceQuota"], body["directoryCount"]) == (-1, -1, 2)


@pytest.mark.parametrize(
    ("method", "query", "op", "error"),
    [
        ("GET", {"op": "liststatus"}, "LISTSTATUS", None),
        ("PUT", {"op": "CREATE"}, "CREATE", None),
        ("GET", {"op": "FOO"}, None, "GetOpParam.Op.FOO"),
        ("PUT", {"op": "OPEN"}, None, "PutOpParam.Op.OPEN"),
        ("GET", {}, None, '"op": missing'),
        ("PATCH", {"op": "OPEN"}, None, "HTTP PATCH"),
    ],
)
def test_op_of(method: str, query: dict[str, str], op: str | None, error: str | None) -> None:
    if error is None:
        assert wj.op_of(method, query) == op
    else:
        with pytest.raises(wj.WebHdfsError, match=error.replace(".", r"\.")):
            wj.op_of(method, query)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("/webhdfs/v1", "/"),
        ("/webhdfs/v1/", "/"),
        ("/webhdfs/v1/a%20b/c?op=OPEN", "/a b/c"),
        ("/webhdfs/v1/%E2%82%AC", "/\u20ac"),
    ],
)
def test_path_of(raw: str, path: str) -> None:
    assert wj.path_of(raw) == path


@pytest.mark.parametrize("raw", ["/webhdfs/v1/%ff%fe", "/webhdfs/v1/a%00b"])
def test_path_of_refuses_bytes_that_are_no_path(raw: str) -> None:
    with pytest.raises(wj.WebHdfsError) as e:
        wj.path_of(raw)
    assert e.value.java_class == wj.ILLEGAL_ARGUMENT


@pytest.mark.parametrize(
    ("value", "ok"),
    [("0", 0), ("42", 42), ("", None), ("-1", "out of range"), ("x", "not a decimal"),
     (str(1 << 63), "out of range"), ("1e3", "not a decimal")],
)  # fmt: skip
def test_long_param(value: str, ok: int | str | None) -> None:
    q = {"offset": value}
    if ok is None:
        assert wj.long_param(q, "offset", 7) == 7
    elif isinstance(ok, int):
        assert wj.long_param(q, "offset", 7) == ok
    else:
        with pytest.raises(wj.ParamError, match=f'"offset": {ok}'):
            wj.long_param(q, "offset", 7)


def test_bool_and_permission_params() -> None:
    assert wj.bool_param({"recursive": "TRUE"}, "recursive", False) is True
    assert wj.bool_param({}, "recursive", False) is False
    with pytest.raises(wj.ParamError, match="neither true nor false"):
        wj.bool_param({"recursive": "yes"}, "recursive", False)
    assert wj.permission_param({"permission": "1777"}, "permission", 0o755) == 0o1777
    for bad in ("999", "2000", "rwx"):
        with pytest.raises(wj.ParamError):
            wj.permission_param({"permission": bad}, "permission", 0o755)


def _md5_of_crcs(block: bytes) -> bytes:
    return hashlib.md5(
        b"".join(
            struct.pack(">I", crc32c.crc32c(block[i : i + 512])) for i in range(0, len(block), 512)
        )
    ).digest()


def test_file_checksum_as_hdfs_combines_block_md5s() -> None:
    blocks = [bytes(range(256)) * 8, b"tail" * 100]  # 2048 bytes, then 400
    sums = [wj.BlockSum(512, (len(b) + 511) // 512, _md5_of_crcs(b)) for b in blocks]
    name, raw = wj.file_checksum(sums)
    assert name == "MD5-of-4MD5-of-512CRC32C"  # crcPerBlock from the first of several blocks
    md5s = sums[0].md5 + sums[1].md5
    assert raw == struct.pack(">IQ", 512, 4) + hashlib.md5(md5s).digest()  # 32 bytes: no pad
    one_name, one_raw = wj.file_checksum(sums[:1])
    assert one_name == "MD5-of-0MD5-of-512CRC32C"
    padded = sums[0].md5 + bytes(16)  # the client's 32-byte buffer, zeros after one MD5
    assert one_raw[12:] == hashlib.md5(padded).digest()
    body = wj.file_checksum_body(name, raw)["FileChecksum"]
    assert body["length"] == 28 and bytes.fromhex(body["bytes"]) == raw


def test_redirect_query_sorts_params_after_op_and_user() -> None:
    q = wj.redirect_query("OPEN", "al ice", {"offset": "5", "namenoderpcaddress": "ns1"})
    assert q == "op=OPEN&user.name=al%20ice&namenoderpcaddress=ns1&offset=5"
    assert wj.quote_path("/a b/c%") == "/a%20b/c%25"


def test_query_of_decodes_strictly_and_keeps_the_first_value() -> None:
    q = wj.query_of("/webhdfs/v1/x?op=RENAME&destination=/a%20b+c&op=DELETE&flag")
    assert q == {"op": "RENAME", "destination": "/a b c", "flag": ""}
    assert wj.query_of("/webhdfs/v1/x") == {}
    with pytest.raises(wj.ParamError, match='"destination": not valid UTF-8'):
        wj.query_of("/webhdfs/v1/x?op=RENAME&destination=/a%ff")
    with pytest.raises(wj.ParamError, match='"owner": holds a NUL'):
        wj.query_of("/webhdfs/v1/x?owner=a%00b")
    with pytest.raises(wj.WebHdfsError, match="parameter name"):
        wj.query_of("/webhdfs/v1/x?%c3%28=1")


def test_an_empty_files_checksum_is_hdfs_crc32_variant() -> None:
    name, raw = wj.file_checksum([])
    assert name == "MD5-of-0MD5-of-0CRC32"  # what the hdfs:// client prints for one
    assert raw.hex() == "00000000000000000000000070bc8f4b72a86921468bf8e8441dce51"
