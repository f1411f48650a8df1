"""ClientProtocol and HAServiceProtocol handlers over a real IpcServer and IpcClient on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pyspark
import pytest
from google.protobuf import descriptor_pb2

import hadoop_wire as wire
from nn_fakes import FakeNameNode, ServedInThread, serve
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient, IpcServer, RemoteError
from qjm.namenode import protocols
from qjm.namenode.client_rpc import client_methods
from qjm.namenode.ha_rpc import ha_methods
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as ha
from test_ipc_server import GENUINE_HADOOP_CLIENT_BYTES, Raw, parse_delimited

CLIENT = protocols.CLIENT_PROTOCOL
STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"
DIR = hdfs.HdfsFileStatusProto.IS_DIR
FILE = hdfs.HdfsFileStatusProto.IS_FILE


class Rpc:
    """Calls ClientProtocol methods by name with the right response type."""

    def __init__(self, client: IpcClient, methods: dict[str, Any] = protocols.CLIENT_METHODS):
        self.client = client
        self.methods = methods

    async def __call__(self, method: str, **fields: Any) -> Any:
        spec = self.methods[method]
        return await self.client.call(method, spec.request(**fields), spec.response, timeout=10)


@pytest.fixture
async def served() -> AsyncIterator[tuple[FakeNameNode, IpcServer, Rpc]]:
    nn = FakeNameNode(superuser="alice")
    server = await serve(nn)
    client = IpcClient(f"127.0.0.1:{server.port}", CLIENT, user="alice")
    try:
        yield nn, server, Rpc(client)
    finally:
        await client.close()
        await server.stop()


def perm(mode: int) -> hdfs.FsPermissionProto:
    return hdfs.FsPermissionProto(perm=mode)


async def test_every_client_and_ha_method_is_registered() -> None:
    nn = FakeNameNode()
    assert set(client_methods(nn)) >= set(protocols.CLIENT_METHODS)  # type: ignore[arg-type]
    assert set(ha_methods(nn)) == set(protocols.HA_SERVICE_METHODS)  # type: ignore[arg-type]
    for name, method in client_methods(nn).items():  # type: ignore[arg-type]
        if name in protocols.CLIENT_METHODS:
            assert method.request_type is protocols.CLIENT_METHODS[name].request


async def test_mkdirs_then_get_file_info_and_listing(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    _, _, rpc = served
    r = await rpc("mkdirs", src="/a/b", masked=perm(0o755), createParent=True)
    assert r.result is True
    again = await rpc("mkdirs", src="/a/b", masked=perm(0o755), createParent=True)
    assert again.result is True  # already a directory: still true, as HDFS
    info = await rpc("getFileInfo", src="/a")
    fs = info.fs
    assert (fs.fileType, fs.path, fs.owner, fs.childrenNum) == (DIR, b"", "alice", 1)
    assert fs.permission.perm == 0o755
    assert fs.fileId > 16385
    missing = await rpc("getFileInfo", src="/nope")
    assert not missing.HasField("fs")
    listing = await rpc("getListing", src="/a", startAfter=b"", needLocation=False)
    entries = listing.dirList.partialListing
    assert [e.path for e in entries] == [b"b"]
    assert listing.dirList.remainingEntries == 0
    none = await rpc("getListing", src="/nope", startAfter=b"", needLocation=False)
    assert not none.HasField("dirList")


async def test_listing_pages_by_start_after_and_limit(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    nn, _, rpc = served
    nn.settings = type(nn.settings)(listing_limit=2)
    for name in ("c", "a", "b"):
        await rpc("mkdirs", src=f"/d/{name}", masked=perm(0o755), createParent=True)
    first = await rpc("getListing", src="/d", startAfter=b"", needLocation=False)
    assert [e.path for e in first.dirList.partialListing] == [b"a", b"b"]
    assert first.dirList.remainingEntries == 1
    rest = await rpc("getListing", src="/d", startAfter=b"b", needLocation=False)
    assert [e.path for e in rest.dirList.partialListing] == [b"c"]
    assert rest.dirList.remainingEntries == 0


async def test_create_answers_the_new_files_status_and_complete_is_true(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    _, _, rpc = served
    created = await rpc(
        "create",
        src="/f",
        masked=perm(0o644 | 0o170000),  # bits above 0o7777 are masked away
        clientName="DFSClient_1",
        createFlag=cn.CREATE,
        createParent=False,
        replication=2,
        blockSize=1 << 27,
    )
    fs = created.fs
    assert (fs.fileType, fs.path, fs.permission.perm, fs.block_replication) == (FILE, b"", 0o644, 2)
    assert (fs.blocksize, fs.length, fs.childrenNum) == (1 << 27, 0, 0)
    done = await rpc("complete", src="/f", clientName="DFSClient_1", fileId=fs.fileId)
    assert done.result is True
    with pytest.raises(RemoteError) as exists:
        await rpc(
            "create",
            src="/f",
            masked=perm(0o644),
            clientName="c",
            createFlag=cn.CREATE,
            createParent=False,
            replication=1,
            blockSize=1 << 27,
        )
    assert exists.value.class_name == "org.apache.hadoop.fs.FileAlreadyExistsException"
    replaced = await rpc(
        "create",
        src="/f",
        masked=perm(0o600),
        clientName="c",
        createFlag=cn.CREATE | cn.OVERWRITE,
        createParent=False,
        replication=1,
        blockSize=1 << 27,
    )
    assert replaced.fs.permission.perm == 0o600
    assert replaced.fs.fileId != fs.fileId


async def test_create_with_append_or_without_create_on_a_missing_file_is_refused(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    _, _, rpc = served
    fields: dict[str, Any] = dict(
        src="/g", masked=perm(0o644), clientName="c", createParent=True, replication=1
    )
    with pytest.raises(RemoteError) as append:
        await rpc("create", createFlag=cn.CREATE | cn.APPEND, blockSize=1 << 27, **fields)
    assert append.value.class_name == "java.lang.UnsupportedOperationException"
    # the rule changed when append came (design §B.14): create refuses the flag, append serves
    assert "APPEND" in append.value.message and "call append" in append.value.message
    with pytest.raises(RemoteError) as overwrite_missing:
        await rpc("create", createFlag=cn.OVERWRITE, blockSize=1 << 27, **fields)
    assert overwrite_missing.value.class_name == "java.io.FileNotFoundException"
    with pytest.raises(RemoteError) as small_block:
        await rpc("create", createFlag=cn.CREATE, blockSize=4096, **fields)
    assert "block size" in small_block.value.message
    with pytest.raises(RemoteError) as replication:
        await rpc("create", createFlag=cn.CREATE, blockSize=1 << 27, **{**fields, "replication": 0})
    assert "replication" in replication.value.message


async def test_replication_out_of_bounds_is_hdfs_ioexception_after_the_ha_check(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    """One home for the rule: BlockManager.verifyReplication's IOException and message."""
    nn, _, rpc = served
    fields: dict[str, Any] = dict(
        masked=perm(0o644), clientName="c", createParent=True, createFlag=cn.CREATE
    )
    with pytest.raises(RemoteError) as low:
        await rpc("create", src="/r", replication=0, blockSize=1 << 27, **fields)
    assert (low.value.class_name, low.value.message) == (
        "java.io.IOException",
        "Requested replication factor of 0 is less than the required minimum of 1 for /r, "
        "clientName=127.0.0.1",
    )
    await rpc("mkdirs", src="/rd", masked=perm(0o755), createParent=True)
    with pytest.raises(RemoteError) as high:  # checked first: a directory is refused too
        await rpc("setReplication", src="/rd", replication=513)
    assert (high.value.class_name, high.value.message) == (
        "java.io.IOException",
        "Requested replication factor of 513 exceeds maximum of 512 for /rd",
    )
    nn.standby = True  # HDFS checks the HA state before the replication
    for method, call in (
        ("create", dict(src="/r", replication=0, blockSize=1 << 27, **fields)),
        ("setReplication", dict(src="/rd", replication=513)),
    ):
        with pytest.raises(RemoteError) as standby:
            await rpc(method, **call)
        assert standby.value.class_name == STANDBY_EXCEPTION, method


async def test_rename_delete_and_attributes(served: tuple[FakeNameNode, IpcServer, Rpc]) -> None:
    _, _, rpc = served
    await rpc("mkdirs", src="/x/y", masked=perm(0o755), createParent=True)
    assert (await rpc("rename", src="/nope", dst="/z")).result is False
    assert (await rpc("rename", src="/x/y", dst="/y")).result is True
    await rpc("rename2", src="/y", dst="/y2", overwriteDest=False)
    assert (await rpc("getFileInfo", src="/y2")).HasField("fs")
    with pytest.raises(RemoteError) as gone:
        await rpc("rename2", src="/y", dst="/y3", overwriteDest=False)
    assert gone.value.class_name == "java.io.FileNotFoundException"

    await rpc("setPermission", src="/y2", permission=perm(0o1777))
    await rpc("setOwner", src="/y2", username="bob")
    st = (await rpc("getFileInfo", src="/y2")).fs
    assert (st.permission.perm, st.owner, st.group) == (0o1777, "bob", "supergroup")
    await rpc("setOwner", src="/y2", groupname="staff")
    st = (await rpc("getFileInfo", src="/y2")).fs
    assert (st.owner, st.group) == ("bob", "staff")  # an absent username leaves the owner

    assert (await rpc("setReplication", src="/y2", replication=2)).result is False  # a directory
    await rpc(
        "create",
        src="/x/f",
        masked=perm(0o644),
        clientName="c",
        createFlag=cn.CREATE,
        createParent=False,
        replication=1,
        blockSize=1 << 27,
    )
    assert (await rpc("setReplication", src="/x/f", replication=3)).result is True
    assert (await rpc("getFileInfo", src="/x/f")).fs.block_replication == 3
    await rpc("setTimes", src="/x/f", mtime=1234, atime=(1 << 64) - 1)  # atime -1: unchanged
    assert (await rpc("getFileInfo", src="/x/f")).fs.modification_time == 1234

    with pytest.raises(RemoteError) as not_empty:
        await rpc("delete", src="/x", recursive=False)
    assert not_empty.value.class_name == "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"
    assert (await rpc("delete", src="/x", recursive=True)).result is True
    assert (await rpc("delete", src="/x", recursive=True)).result is False


async def test_content_summary_server_defaults_stats_lease_msync_state(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    nn, _, rpc = served
    await rpc("mkdirs", src="/s/t", masked=perm(0o755), createParent=True)
    summary = (await rpc("getContentSummary", path="/s")).summary
    assert (summary.directoryCount, summary.fileCount) == (2, 0)
    assert summary.quota == (1 << 64) - 1  # Java's -1: no quota
    with pytest.raises(RemoteError) as missing:
        await rpc("getContentSummary", path="/nope")
    assert missing.value.class_name == "java.io.FileNotFoundException"

    d = (await rpc("getServerDefaults")).serverDefaults
    assert (d.blockSize, d.replication) == (nn.settings.block_size, nn.settings.default_replication)
    assert (d.bytesPerChecksum, d.writePacketSize, d.fileBufferSize) == (512, 65536, 4096)
    assert (d.trashInterval, d.checksumType) == (0, hdfs.CHECKSUM_CRC32C)
    stats = await rpc("getFsStats")
    assert (stats.capacity, stats.used, stats.missing_blocks) == (0, 0, 0)
    await rpc("renewLease", clientName="DFSClient_1")
    await rpc("msync")
    assert (await rpc("getHAServiceState")).state == ha.ACTIVE


async def test_a_path_past_hdfs_limits_is_refused_first_in_any_state(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    """As HDFS's RPC server: checkPathLength before the HA check, so a standby answers the
    limit too and a client does not fail over only to be refused (design §N.4)."""
    nn, _, rpc = served
    deep = "/d" * 1001
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("mkdirs", "mkdirs", dict(src=deep, masked=perm(0o755), createParent=True)),
        (
            "create",
            "create",
            dict(
                src=deep,
                masked=perm(0o644),
                clientName="c",
                createFlag=cn.CREATE,
                createParent=True,
                replication=1,
                blockSize=1 << 27,
            ),
        ),
        ("rename", "rename", dict(src="/a", dst=deep)),
        ("rename2", "rename", dict(src="/a", dst=deep, overwriteDest=False)),
    ]
    for standby in (False, True):
        nn.standby = standby
        for method, prefix, fields in calls:
            with pytest.raises(RemoteError) as e:
                await rpc(method, **fields)
            assert e.value.class_name == "java.io.IOException", (method, standby)
            assert e.value.message == (
                f"{prefix}: Pathname too long.  Limit 8000 characters, 1000 levels."
            )


async def test_a_standby_answers_standby_exception_to_every_namespace_call(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    nn, _, rpc = served
    nn.standby = True
    calls: list[tuple[str, dict[str, Any]]] = [
        ("getFileInfo", dict(src="/")),
        ("getListing", dict(src="/", startAfter=b"", needLocation=False)),
        ("mkdirs", dict(src="/a", masked=perm(0o755), createParent=True)),
        (
            "create",
            dict(
                src="/f",
                masked=perm(0o644),
                clientName="c",
                createFlag=cn.CREATE,
                createParent=True,
                replication=1,
                blockSize=1 << 27,
            ),
        ),
        ("complete", dict(src="/f", clientName="c")),
        ("rename", dict(src="/a", dst="/b")),
        ("rename2", dict(src="/a", dst="/b", overwriteDest=False)),
        ("delete", dict(src="/a", recursive=True)),
        ("setPermission", dict(src="/", permission=perm(0o755))),
        ("setOwner", dict(src="/", username="x")),
        ("setReplication", dict(src="/f", replication=1)),
        ("setTimes", dict(src="/", mtime=1, atime=1)),
        ("getContentSummary", dict(path="/")),
        ("renewLease", dict(clientName="c")),
        ("msync", {}),
    ]
    for method, fields in calls:
        with pytest.raises(RemoteError) as refused:
            await rpc(method, **fields)
        assert refused.value.class_name == STANDBY_EXCEPTION, method
    assert (await rpc("getHAServiceState")).state == ha.STANDBY
    assert (await rpc("getServerDefaults")).serverDefaults.blockSize > 0


def _raw_call(port: int, method: str, request: bytes, state_id: int | None) -> dict[int, Any]:
    """One call by hand with stateId (field 8) in the request header; the response header."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(wire.PREAMBLE + wire.connection_context(CLIENT, user="alice"))
        header = wire.rpc_request_header(0)
        if state_id is not None:
            header += wire.field(8, state_id)
        method_header = wire.field(1, method) + wire.field(2, CLIENT) + wire.field(3, 1)
        sock.sendall(wire.frame(header, method_header, request))
        response, _ = wire.read_response(sock)
        return response


async def test_state_id_in_request_reaches_the_handler_and_every_response_carries_ours(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    nn, server, rpc = served
    await rpc("mkdirs", src="/a/b/c", masked=perm(0o755), createParent=True)
    assert nn.txid == 3
    nn.state_ids.clear()
    get_root = wire.field(1, "/")
    header = await asyncio.to_thread(_raw_call, server.port, "getFileInfo", get_root, 2)
    assert (header[2], header[9]) == (wire.SUCCESS, 3)  # status, stateId
    assert nn.state_ids == [2]
    plain = await asyncio.to_thread(_raw_call, server.port, "getFileInfo", get_root, None)
    assert plain[9] == 3
    assert nn.state_ids == [2, None]
    nn.standby = True
    refused = await asyncio.to_thread(_raw_call, server.port, "getFileInfo", get_root, 1)
    assert (refused[2], refused[4], refused[9]) == (wire.ERROR, STANDBY_EXCEPTION.encode(), 3)


async def test_ha_service_protocol(served: tuple[FakeNameNode, IpcServer, Rpc]) -> None:
    nn, server, _ = served
    client = IpcClient(f"127.0.0.1:{server.port}", protocols.HA_SERVICE_PROTOCOL, user="alice")
    rpc = Rpc(client, protocols.HA_SERVICE_METHODS)
    try:
        nn.standby = True
        await rpc("monitorHealth")
        status = await rpc("getServiceStatus")
        assert (status.state, status.readyToBecomeActive) == (ha.STANDBY, True)
        info = ha.HAStateChangeRequestInfoProto(reqSource=ha.REQUEST_BY_USER_FORCED)
        await rpc("transitionToActive", reqInfo=info)
        assert nn.transitions == [("active", "REQUEST_BY_USER_FORCED")]
        assert (await rpc("getServiceStatus")).state == ha.ACTIVE
        info = ha.HAStateChangeRequestInfoProto(reqSource=ha.REQUEST_BY_USER)
        await rpc("transitionToStandby", reqInfo=info)
        assert nn.transitions[-1] == ("standby", "REQUEST_BY_USER")
        nn.healthy = False
        with pytest.raises(RemoteError) as sick:
            await rpc("monitorHealth")
        assert sick.value.class_name == "org.apache.hadoop.ha.HealthCheckFailedException"
        status = await rpc("getServiceStatus")
        assert (status.readyToBecomeActive, status.notReadyReason) == (False, "not healthy: test")
        with pytest.raises(RemoteError) as failed:
            await rpc("transitionToActive", reqInfo=info)
        assert failed.value.class_name == "org.apache.hadoop.ha.ServiceFailedException"
    finally:
        await client.close()


def create_fields(src: str, **more: Any) -> dict[str, Any]:
    """A plain create request: CREATE, no parents, replication 1, 128 MiB blocks."""
    fields: dict[str, Any] = dict(
        src=src,
        masked=perm(0o644),
        clientName="DFSClient_test",
        createFlag=cn.CREATE,
        createParent=False,
        replication=1,
        blockSize=1 << 27,
    )
    return {**fields, **more}


async def test_what_fsshell_and_hdfs_native_read_of_an_empty_file(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    _, _, rpc = served
    await rpc("mkdirs", src="/d", masked=perm(0o755), createParent=True)
    fs = (await rpc("create", **create_fields("/d/e"))).fs
    assert (await rpc("isFileClosed", src="/d/e")).result is False
    await rpc("fsync", src="/d/e", client="DFSClient_test", fileId=fs.fileId)
    await rpc("complete", src="/d/e", clientName="DFSClient_test", fileId=fs.fileId)
    assert (await rpc("isFileClosed", src="/d/e")).result is True

    located = (await rpc("getBlockLocations", src="/d/e", offset=0, length=1 << 30)).locations
    assert (located.fileLength, len(located.blocks), located.underConstruction) == (0, 0, False)
    with pytest.raises(RemoteError) as missing:
        await rpc("getBlockLocations", src="/d/nope", offset=0, length=1)
    assert missing.value.class_name == "java.io.FileNotFoundException"
    with pytest.raises(RemoteError) as a_dir:
        await rpc("getBlockLocations", src="/d", offset=0, length=1)
    assert "not a file" in a_dir.value.message

    info = (await rpc("getLocatedFileInfo", src="/d/e")).fs
    assert (info.fileType, info.locations.fileLength) == (FILE, 0)
    assert (await rpc("getFileLinkInfo", src="/d/e")).fs.fileId == fs.fileId
    assert not (await rpc("getFileLinkInfo", src="/d/nope")).HasField("fs")
    assert (await rpc("getPreferredBlockSize", filename="/d/e")).bsize == 1 << 27

    acl = (await rpc("getAclStatus", src="/d/e")).result
    assert (acl.owner, acl.sticky, list(acl.entries), acl.permission.perm) == (
        "alice",
        False,
        [],
        0o644,
    )
    assert list((await rpc("getXAttrs", src="/d/e")).xAttrs) == []
    with pytest.raises(RemoteError) as named:
        await rpc("getXAttrs", src="/d/e", xAttrs=[cn.XAttrProto(namespace=0, name="a")])
    assert "not found" in named.value.message
    assert list((await rpc("listXAttrs", src="/d/e")).xAttrs) == []
    zones = await rpc("listEncryptionZones", id=0)
    assert (list(zones.zones), zones.hasMore) == ([], False)
    assert not (await rpc("getEZForPath", src="/d/e")).HasField("zone")
    assert (await rpc("setSafeMode", action=cn.SAFEMODE_GET)).result is False


async def test_quota_usage_and_set_quota(served: tuple[FakeNameNode, IpcServer, Rpc]) -> None:
    _, _, rpc = served
    await rpc("mkdirs", src="/q/a", masked=perm(0o755), createParent=True)
    usage = (await rpc("getQuotaUsage", path="/q")).usage
    assert (usage.fileAndDirectoryCount, usage.quota) == (2, (1 << 64) - 1)
    await rpc("setQuota", path="/q", namespaceQuota=3, storagespaceQuota=(1 << 64) - 1)
    usage = (await rpc("getQuotaUsage", path="/q")).usage
    assert usage.quota == 3
    await rpc("mkdirs", src="/q/b", masked=perm(0o755), createParent=True)
    with pytest.raises(RemoteError) as over:
        await rpc("mkdirs", src="/q/c", masked=perm(0o755), createParent=True)
    assert over.value.class_name == "org.apache.hadoop.hdfs.protocol.NSQuotaExceededException"


async def test_data_acl_and_xattr_calls_are_refused_by_name(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    _, _, rpc = served
    await rpc("create", **create_fields("/f"))
    block = hdfs.ExtendedBlockProto(poolId="BP-1", blockId=1, generationStamp=1)
    # addBlock, abandonBlock, append, truncate, concat and setSafeMode are served since
    # the NameNode manages blocks (design §B.14); without DataNodes addBlock is HDFS's
    # IOException naming how many nodes there are
    with pytest.raises(RemoteError) as no_nodes:
        await rpc("addBlock", src="/f", clientName="DFSClient_test")
    assert no_nodes.value.class_name == "java.io.IOException"
    assert no_nodes.value.message == (
        "File /f could only be written to 0 of the 1 minReplication nodes. There are 0 "
        "datanode(s) running and 0 node(s) are excluded in this operation."
    )
    assert (await rpc("setSafeMode", action=cn.SAFEMODE_GET)).result is False
    assert (await rpc("setSafeMode", action=cn.SAFEMODE_ENTER)).result is True
    assert (await rpc("setSafeMode", action=cn.SAFEMODE_LEAVE)).result is False
    del block
    # recoverLease is served (design §B.16): /f has no block, so it is closed at once
    assert (await rpc("recoverLease", src="/f", clientName="c")).result is True
    assert (await rpc("isFileClosed", src="/f")).result is True
    refused: list[tuple[str, dict[str, Any], str]] = [
        ("modifyAclEntries", dict(src="/f"), "ACLs"),
        ("removeAclEntries", dict(src="/f"), "ACLs"),
        ("removeDefaultAcl", dict(src="/f"), "ACLs"),
        ("removeAcl", dict(src="/f"), "ACLs"),
        ("setAcl", dict(src="/f"), "ACLs"),
        ("setXAttr", dict(src="/f"), "extended attributes"),
        ("removeXAttr", dict(src="/f"), "extended attributes"),
    ]
    for method, fields, reason in refused:
        with pytest.raises(RemoteError) as err:
            await rpc(method, **fields)
        assert err.value.class_name == "java.lang.UnsupportedOperationException", method
        assert reason in err.value.message, (method, err.value.message)
        assert method in err.value.message


async def test_permissions_are_checked_for_the_calling_user(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    nn, server, rpc = served
    await rpc("mkdirs", src="/home/alice", masked=perm(0o700), createParent=True)
    await rpc("create", **create_fields("/home/alice/f"))
    await rpc("setPermission", src="/home", permission=perm(0o755))
    nn.groups["bob"] = ("staff",)
    bob = Rpc(IpcClient(f"127.0.0.1:{server.port}", CLIENT, user="bob"))
    try:
        with pytest.raises(RemoteError) as denied:
            await bob("getFileInfo", src="/home/alice/f")
        assert denied.value.class_name == "org.apache.hadoop.security.AccessControlException"
        with pytest.raises(RemoteError) as mkdir:
            await bob("mkdirs", src="/home/bob", masked=perm(0o755), createParent=True)
        assert mkdir.value.class_name == "org.apache.hadoop.security.AccessControlException"
        await bob("checkAccess", path="/home", mode=cn.AclEntryProto.READ_EXECUTE)
        with pytest.raises(RemoteError) as write:
            await bob("checkAccess", path="/home", mode=cn.AclEntryProto.WRITE)
        assert write.value.class_name == "org.apache.hadoop.security.AccessControlException"
        assert 'user=bob, access=WRITE, inode="/home"' in write.value.message
        await rpc("setOwner", src="/home", groupname="staff")
        await rpc("setPermission", src="/home", permission=perm(0o775))
        await bob("checkAccess", path="/home", mode=cn.AclEntryProto.WRITE)  # by group now
        assert (await bob("mkdirs", src="/home/bob", masked=perm(0o755), createParent=False)).result
    finally:
        await bob.client.close()


async def test_listing_with_locations_gives_every_file_a_block_list(
    served: tuple[FakeNameNode, IpcServer, Rpc],
) -> None:
    # DistributedFileSystem.listLocatedStatus casts each file's status to the located kind,
    # which the Java client builds only when the locations field is present.
    _, _, rpc = served
    await rpc("mkdirs", src="/l/d", masked=perm(0o755), createParent=True)
    await rpc("create", **create_fields("/l/f"))
    plain = await rpc("getListing", src="/l", startAfter=b"", needLocation=False)
    assert not any(e.HasField("locations") for e in plain.dirList.partialListing)
    located = await rpc("getListing", src="/l", startAfter=b"", needLocation=True)
    by_name = {e.path: e for e in located.dirList.partialListing}
    assert not by_name[b"d"].HasField("locations")
    assert by_name[b"f"].HasField("locations")
    assert (len(by_name[b"f"].locations.blocks), by_name[b"f"].locations.underConstruction) == (
        0,
        True,
    )


async def test_the_genuine_fsshell_call_is_answered_and_refused_by_a_standby() -> None:
    nn = FakeNameNode(superuser="root")
    server = await serve(nn)
    try:
        for standby in (False, True):
            nn.standby = standby
            raw = await Raw.open(server.port, preamble=b"")
            try:
                await raw.send(GENUINE_HADOOP_CLIENT_BYTES)  # getFileInfo("/tmp") as root
                header, rest, _ = await raw.response()
            finally:
                raw.close()
            assert header.callId == 0 and header.HasField("stateId")
            if standby:
                assert header.exceptionClassName == STANDBY_EXCEPTION
                assert "standby" in header.errorMsg
            else:
                assert header.status == 0
                body, _ = parse_delimited(rest, 0)
                assert not cn.GetFileInfoResponseProto.FromString(body).HasField("fs")
    finally:
        await server.stop()


def hadoop_descriptors(tmp: Path) -> dict[str, Any]:
    """Hadoop's own message descriptors (by name), read from the client jar with Java."""
    jars = JARS / "*"
    source = tmp / "Dump.java"
    source.write_text(DUMP_JAVA)
    subprocess.run(
        ["javac", "-d", str(tmp), "-cp", str(jars), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    classes = [
        f"org.apache.hadoop.hdfs.protocol.proto.{c}"
        for c in ("HdfsProtos", "ClientNamenodeProtocolProtos", "AclProtos", "XAttrProtos")
    ] + [
        "org.apache.hadoop.hdfs.protocol.proto.EncryptionZonesProtos",
        "org.apache.hadoop.ha.proto.HAServiceProtocolProtos",
    ]
    subprocess.run(
        ["java", "-cp", f"{tmp}:{jars}", "Dump", str(tmp), *classes],
        check=True,
        capture_output=True,
        timeout=120,
    )
    found: dict[str, Any] = {}

    def walk(prefix: str, messages: Any) -> None:
        for m in messages:
            found[prefix + m.name] = m
            walk(prefix + m.name + ".", m.nested_type)

    for pb in tmp.glob("*.pb"):
        walk("", descriptor_pb2.FileDescriptorProto.FromString(pb.read_bytes()).message_type)
    return found


DUMP_JAVA = """
import java.nio.file.*;
public class Dump {
  public static void main(String[] a) throws Exception {
    for (int i = 1; i < a.length; i++) {
      Object d = Class.forName(a[i]).getMethod("getDescriptor").invoke(null);
      Object p = d.getClass().getMethod("toProto").invoke(d);
      byte[] b = (byte[]) p.getClass().getMethod("toByteArray").invoke(p);
      Files.write(Paths.get(a[0], a[i] + ".pb"), b);
    }
  }
}
"""
JARS = Path(pyspark.__path__[0]) / "jars"  # Hadoop's client jars ship inside pyspark


@pytest.mark.slow
def test_our_messages_have_hadoops_field_numbers_types_and_labels(tmp_path: Path) -> None:
    theirs = hadoop_descriptors(tmp_path)
    assert "HdfsFileStatusProto" in theirs and "HAServiceStateRequestProto" in theirs
    checked = 0
    for module in (cn, hdfs, ha):
        for name, desc in module.DESCRIPTOR.message_types_by_name.items():
            hadoop = theirs.get(name)
            assert hadoop is not None, f"{name} is not a Hadoop message"
            by_number = {f.number: f for f in hadoop.field}
            for f in desc.fields:
                h = by_number.get(f.number)
                label = 3 if f.is_repeated else 2 if f.is_required else 1
                assert h is not None, f"{name}.{f.name} = {f.number} is not in Hadoop's"
                assert (h.name, h.type, h.label) == (f.name, f.type, label), f"{name}.{f.name}"
                checked += 1
    assert checked > 150


def test_hdfs_native_client_works_and_is_refused_clearly_where_data_is_needed() -> None:
    hdfs_native = pytest.importorskip("hdfs_native")
    with ServedInThread(FakeNameNode(standby=True), FakeNameNode()) as served:
        standby, active = served.addresses
        client = hdfs_native.Client(
            "hdfs://ns1",
            config={
                "dfs.ha.namenodes.ns1": "nn1,nn2",
                "dfs.namenode.rpc-address.ns1.nn1": standby,
                "dfs.namenode.rpc-address.ns1.nn2": active,
            },
        )
        client.mkdirs("/n/d", create_parent=True)
        client.create("/n/f").close()
        assert client.read("/n/f").read() == b""
        client.rename("/n/f", "/n/g")
        client.set_permission("/n/g", 0o600)
        client.set_owner("/n/g", "bob", "staff")
        assert client.set_replication("/n/g", 2)
        client.set_times("/n/g", 1000, 2000)
        info = client.get_file_info("/n/g")
        assert (info.permission, info.owner, info.group, info.replication) == (
            0o600,
            "bob",
            "staff",
            2,
        )
        assert info.modification_time == 1000
        assert [s.path for s in client.list_status("/n")] == ["/n/d", "/n/g"]
        summary = client.get_content_summary("/n")
        assert (summary.file_count, summary.directory_count) == (1, 2)
        acl = client.get_acl_status("/n/g")
        assert (acl.owner, acl.entries) == ("bob", [])
        writer = client.create("/n/data")
        with pytest.raises(Exception, match="could only be written to 0 of the 1 minReplication"):
            writer.write(b"x" * 10)
            writer.close()
        # Close it while its client lives: hdfs-native's writer, closed by the garbage
        # collector after its client is gone, blocks for a minute.
        with contextlib.suppress(Exception):
            writer.close()
        client.append("/n/g").close()  # an empty file: nothing to write, closed again
        assert client.get_file_info("/n/g").length == 0
        with pytest.raises(FileNotFoundError):
            client.get_file_info("/nope")
        assert client.delete("/n", recursive=True)
        assert served.nodes[0].calls  # it asked the standby first and failed over
