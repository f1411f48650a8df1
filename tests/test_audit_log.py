"""The audit log (design §S.7): HDFS's line format, and a line per call through the real IPC."""

from __future__ import annotations

from pathlib import Path

import pytest

from nn_fakes import FakeNameNode, serve
from qjm.hdfs.proto import hdfs_pb2 as hdfs
from qjm.ipc import IpcClient, RemoteError
from qjm.namenode import protocols
from qjm.namenode.audit import AuditLog, audit_line, field_text, permission_text
from qjm.namenode.types import FileStatus


def status(owner: str = "alice", group: str = "supergroup", mode: int = 0o755) -> FileStatus:
    return FileStatus("a", True, 0, mode, owner, group, 0, 0, 0, 0, 1, 0)


@pytest.mark.parametrize(
    ("mode", "text"),
    [(0o755, "rwxr-xr-x"), (0o644, "rw-r--r--"), (0o1777, "rwxrwxrwt"), (0o1776, "rwxrwxrwT")],
)
def test_permissions_read_as_hadoop_prints_them(mode: int, text: str) -> None:
    assert permission_text(mode) == text


def test_a_line_has_hdfs_fields_in_hdfs_order() -> None:
    line = audit_line(
        allowed=True,
        user="alice@QJM.TEST",
        auth="KERBEROS",
        ip="127.0.0.1",
        cmd="rename",
        src="/a",
        dst="/b",
        status=status(),
    )
    assert line == (
        "allowed=true\tugi=alice@QJM.TEST (auth:KERBEROS)\tip=/127.0.0.1\tcmd=rename\t"
        "src=/a\tdst=/b\tperm=alice:supergroup:rwxr-xr-x\tproto=rpc"
    )
    refused = audit_line(
        allowed=False,
        user="bob",
        auth="SIMPLE",
        ip="::1",
        cmd="delete",
        src="/x",
        dst=None,
        status=None,
    )
    assert refused.startswith("allowed=false\tugi=bob (auth:SIMPLE)\tip=/::1\tcmd=delete")
    assert "\tdst=null\tperm=null\t" in refused


def test_list_fields_read_as_java_prints_an_array() -> None:
    class Concat:
        srcs = ["/a", "/b"]
        trg = "/t"

    assert field_text(Concat(), "srcs") == "[/a, /b]"
    assert field_text(Concat(), "trg") == "/t"
    assert field_text(Concat(), "") is None


def test_the_log_file_gets_every_line_in_order_after_close(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit" / "hdfs-audit.log")
    for i in range(500):
        log.write(f"allowed=true\tcmd=mkdirs\tsrc=/d{i}")
    log.close()
    lines = (tmp_path / "audit" / "hdfs-audit.log").read_text().splitlines()
    assert len(lines) == 500
    assert all(" INFO FSNamesystem.audit: allowed=true" in line for line in lines)
    assert lines[-1].endswith("src=/d499")


async def test_each_namespace_call_through_ipc_writes_one_line(tmp_path: Path) -> None:
    nn = FakeNameNode(superuser="alice")
    nn.audit = AuditLog(tmp_path / "hdfs-audit.log")
    server = await serve(nn)
    alice = IpcClient(f"127.0.0.1:{server.port}", protocols.CLIENT_PROTOCOL, user="alice")
    bob = IpcClient(f"127.0.0.1:{server.port}", protocols.CLIENT_PROTOCOL, user="bob")

    async def call(client: IpcClient, method: str, **fields: object) -> object:
        spec = protocols.CLIENT_METHODS[method]
        return await client.call(method, spec.request(**fields), spec.response, timeout=10)

    try:
        mode = hdfs.FsPermissionProto(perm=0o700)
        await call(alice, "mkdirs", src="/private", masked=mode, createParent=True)
        await call(alice, "getFileInfo", src="/private")
        with pytest.raises(RemoteError, match="AccessControlException"):
            await call(bob, "mkdirs", src="/private/x", masked=mode, createParent=True)
        await call(alice, "getServerDefaults")  # not a namespace call: no line
    finally:
        await alice.close()
        await bob.close()
        await server.stop()
        nn.audit.close()
    lines = [
        line.split(": ", 1)[1] for line in (tmp_path / "hdfs-audit.log").read_text().splitlines()
    ]
    assert [line.split("\t")[3] for line in lines] == [
        "cmd=mkdirs",
        "cmd=getfileinfo",
        "cmd=mkdirs",
    ]
    assert lines[0].startswith("allowed=true\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1\t")
    assert lines[0].endswith("src=/private\tdst=null\tperm=alice:supergroup:rwx------\tproto=rpc")
    assert lines[1].endswith("src=/private\tdst=null\tperm=null\tproto=rpc")
    assert lines[2].startswith("allowed=false\tugi=bob (auth:SIMPLE)")
