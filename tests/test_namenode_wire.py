"""The NameNode's wire contract: our .proto files read Hadoop's bytes and write Hadoop's bytes."""

from __future__ import annotations

import pytest
from google.protobuf.message import Message

from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc.framing import FrameReader, parse_preamble, read_delimited
from qjm.ipc.proto.ProtobufRpcEngine_pb2 import RequestHeaderProto
from qjm.namenode import protocols
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as ha
from test_ipc_server import GENUINE_HADOOP_CLIENT_BYTES


def test_genuine_hadoop_get_file_info_parses() -> None:
    # Hadoop 3.4.1's FsShell: preamble, connection context frame, then the getFileInfo call.
    assert parse_preamble(GENUINE_HADOOP_CLIENT_BYTES[:7]) == (9, 0, 0)
    frames = FrameReader().feed(GENUINE_HADOOP_CLIENT_BYTES[7:])
    assert len(frames) == 2
    call = frames[1]
    _, pos = read_delimited(call, 0)  # RpcRequestHeaderProto
    start, end = read_delimited(call, pos)
    header = RequestHeaderProto.FromString(call[start:end])
    assert header.declaringClassProtocolName == protocols.CLIENT_PROTOCOL
    spec = protocols.CLIENT_METHODS[header.methodName]
    start, end = read_delimited(call, end)
    assert end == len(call)
    request = spec.request.FromString(call[start:end])
    assert isinstance(request, cn.GetFileInfoRequestProto)
    assert request.src == "/tmp"
    assert request.SerializeToString() == call[start:end]


def _key(field: int, wire_type: int) -> bytes:
    """A one-byte protobuf key (field numbers below 16)."""
    return bytes([field << 3 | wire_type])


VARINT, LEN = 0, 2

# Golden bytes written from Hadoop's field numbers, not from our generated code.
GOLDEN: list[tuple[Message, bytes]] = [
    (
        cn.MkdirsRequestProto(
            src="/a", masked=hdfs.FsPermissionProto(perm=0o755), createParent=True
        ),
        # src=1 "/a"; masked=2 {perm=1: 493 = 0xed 0x03}; createParent=3 true
        _key(1, LEN)
        + b"\x02/a"
        + _key(2, LEN)
        + b"\x03"
        + _key(1, VARINT)
        + b"\xed\x03"
        + _key(3, VARINT)
        + b"\x01",
    ),
    (
        cn.GetListingRequestProto(src="/d", startAfter=b"x", needLocation=False),
        _key(1, LEN) + b"\x02/d" + _key(2, LEN) + b"\x01x" + _key(3, VARINT) + b"\x00",
    ),
    (
        cn.CreateRequestProto(
            src="/f",
            masked=hdfs.FsPermissionProto(perm=0o644),
            clientName="c",
            createFlag=cn.CREATE | cn.OVERWRITE,
            createParent=True,
            replication=3,
            blockSize=128 << 20,
        ),
        # 0o644 = 420 = 0xa4 0x03; 128 MiB = 2**27 = 0x80 0x80 0x80 0x40
        _key(1, LEN)
        + b"\x02/f"
        + _key(2, LEN)
        + b"\x03"
        + _key(1, VARINT)
        + b"\xa4\x03"
        + _key(3, LEN)
        + b"\x01c"
        + _key(4, VARINT)
        + b"\x03"
        + _key(5, VARINT)
        + b"\x01"
        + _key(6, VARINT)
        + b"\x03"
        + _key(7, VARINT)
        + b"\x80\x80\x80\x40",
    ),
    (
        cn.Rename2RequestProto(src="/a", dst="/b", overwriteDest=True),
        _key(1, LEN) + b"\x02/a" + _key(2, LEN) + b"\x02/b" + _key(3, VARINT) + b"\x01",
    ),
    (
        cn.SetOwnerRequestProto(src="/a", groupname="g"),
        _key(1, LEN) + b"\x02/a" + _key(3, LEN) + b"\x01g",
    ),
    (
        cn.SetTimesRequestProto(src="/a", mtime=1, atime=2),
        _key(1, LEN) + b"\x02/a" + _key(2, VARINT) + b"\x01" + _key(3, VARINT) + b"\x02",
    ),
    (
        cn.GetContentSummaryRequestProto(path="/"),
        _key(1, LEN) + b"\x01/",
    ),
    (
        hdfs.HdfsFileStatusProto(
            fileType=hdfs.HdfsFileStatusProto.IS_FILE,
            path=b"f",
            length=5,
            permission=hdfs.FsPermissionProto(perm=0o644),
            owner="o",
            group="g",
            modification_time=7,
            access_time=8,
            block_replication=3,
            blocksize=1024,
            fileId=16386,
            childrenNum=0,
            storagePolicy=0,
            flags=hdfs.HdfsFileStatusProto.HAS_ACL,
        ),
        # 1024 = 0x80 0x08; 16386 = 0x82 0x80 0x01; fields 16 and 18 take two-byte keys
        _key(1, VARINT)
        + b"\x02"
        + _key(2, LEN)
        + b"\x01f"
        + _key(3, VARINT)
        + b"\x05"
        + _key(4, LEN)
        + b"\x03"
        + _key(1, VARINT)
        + b"\xa4\x03"
        + _key(5, LEN)
        + b"\x01o"
        + _key(6, LEN)
        + b"\x01g"
        + _key(7, VARINT)
        + b"\x07"
        + _key(8, VARINT)
        + b"\x08"
        + _key(10, VARINT)
        + b"\x03"
        + _key(11, VARINT)
        + b"\x80\x08"
        + _key(13, VARINT)
        + b"\x82\x80\x01"
        + _key(14, VARINT)
        + b"\x00"
        + b"\x80\x01\x00"  # storagePolicy=16: key (16 << 3) = 128 = 0x80 0x01
        + b"\x90\x01\x01",  # flags=18: key (18 << 3) = 144 = 0x90 0x01
    ),
    (
        hdfs.DirectoryListingProto(remainingEntries=4),
        _key(2, VARINT) + b"\x04",
    ),
    (
        cn.GetFsStatsResponseProto(
            capacity=1,
            used=2,
            remaining=3,
            under_replicated=4,
            corrupt_blocks=5,
            missing_blocks=6,
        ),
        b"".join(_key(n, VARINT) + bytes([n]) for n in range(1, 7)),
    ),
    (
        cn.HAServiceStateResponseProto(state=ha.STANDBY),
        _key(1, VARINT) + b"\x02",
    ),
    (
        ha.TransitionToActiveRequestProto(
            reqInfo=ha.HAStateChangeRequestInfoProto(reqSource=ha.REQUEST_BY_USER_FORCED)
        ),
        _key(1, LEN) + b"\x02" + _key(1, VARINT) + b"\x01",
    ),
    (
        ha.GetServiceStatusResponseProto(
            state=ha.ACTIVE, readyToBecomeActive=True, notReadyReason="r"
        ),
        _key(1, VARINT) + b"\x01" + _key(2, VARINT) + b"\x01" + _key(3, LEN) + b"\x01r",
    ),
]


@pytest.mark.parametrize(("message", "expected"), GOLDEN, ids=lambda v: type(v).__name__)
def test_golden_bytes(message: Message, expected: bytes) -> None:
    assert message.SerializeToString(deterministic=True) == expected
    again = type(message).FromString(expected)
    assert again == message


def test_enum_values_are_hadoops() -> None:
    assert (ha.INITIALIZING, ha.ACTIVE, ha.STANDBY, ha.OBSERVER) == (0, 1, 2, 3)
    assert (ha.REQUEST_BY_USER, ha.REQUEST_BY_USER_FORCED, ha.REQUEST_BY_ZKFC) == (0, 1, 2)
    ft = hdfs.HdfsFileStatusProto
    assert (ft.IS_DIR, ft.IS_FILE, ft.IS_SYMLINK) == (1, 2, 3)
    assert (cn.CREATE, cn.OVERWRITE, cn.APPEND) == (1, 2, 4)
    assert hdfs.HdfsFileStatusProto().childrenNum == -1  # Hadoop's default
    assert hdfs.FsServerDefaultsProto().checksumType == hdfs.CHECKSUM_CRC32


def test_required_fields_are_required() -> None:
    assert not cn.MkdirsRequestProto(src="/a").IsInitialized()
    assert not cn.GetFileInfoResponseProto(fs=hdfs.HdfsFileStatusProto()).IsInitialized()
    assert cn.GetFileInfoResponseProto().IsInitialized()  # fs is optional: "no such file"


# Hadoop's request/response message names where they are not Method + Request/ResponseProto.
ODD_NAMES = {
    "getFsStats": ("GetFsStatusRequestProto", "GetFsStatsResponseProto"),
    "getHAServiceState": ("HAServiceStateRequestProto", "HAServiceStateResponseProto"),
}


SECURITY_PROTO_CALLS = {"getDelegationToken", "renewDelegationToken", "cancelDelegationToken"}


def test_method_tables_name_hadoops_messages() -> None:
    assert protocols.CLIENT_PROTOCOL == "org.apache.hadoop.hdfs.protocol.ClientProtocol"
    assert protocols.HA_SERVICE_PROTOCOL == "org.apache.hadoop.ha.HAServiceProtocol"
    assert set(protocols.CLIENT_METHODS) >= {  # design §N.10's calls; more that real clients call
        "getFileInfo",
        "getListing",
        "mkdirs",
        "create",
        "complete",
        "rename",
        "rename2",
        "delete",
        "setPermission",
        "setOwner",
        "setReplication",
        "setTimes",
        "getContentSummary",
        "getServerDefaults",
        "getFsStats",
        "renewLease",
        "msync",
        "getHAServiceState",
    }
    assert set(protocols.HA_SERVICE_METHODS) == {
        "monitorHealth",
        "getServiceStatus",
        "transitionToActive",
        "transitionToStandby",
    }
    packages = {
        protocols.CLIENT_PROTOCOL: "hadoop.hdfs",
        protocols.HA_SERVICE_PROTOCOL: "hadoop.common",
    }
    for protocol, methods in protocols.PROTOCOLS.items():
        for name, spec in methods.items():
            assert spec.name == name
            stem = name[0].upper() + name[1:]
            want = ODD_NAMES.get(name, (stem + "RequestProto", stem + "ResponseProto"))
            got = (spec.request.DESCRIPTOR.full_name, spec.response.DESCRIPTOR.full_name)
            # ClientProtocol's delegation token calls take Security.proto's messages
            package = "hadoop.common" if name in SECURITY_PROTO_CALLS else packages[protocol]
            assert got == tuple(f"{package}.{n}" for n in want), name
