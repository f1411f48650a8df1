"""The NameNode's WebHDFS handlers (design §W) in this process, over a FakeNameNode: the
ClientProtocol handlers' permission checks and refusals reach the caller as HDFS's JSON, and
each call is audited with proto=webhdfs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from nn_fakes import FakeNameNode
from qjm.ipc.sasl import NO_PROXIES, ProxyPolicy, set_proxy_policy
from qjm.namenode.audit import AuditLog
from qjm.namenode.webhdfs import add_routes
from qjm.security.proxy_users import ProxyRule


@pytest.fixture
async def nn(tmp_path: Path) -> AsyncIterator[FakeNameNode]:
    node = FakeNameNode(superuser="hdfs")
    node.audit = AuditLog(tmp_path / "hdfs-audit.log")
    try:
        yield node
    finally:
        if node.audit is not None:
            node.audit.close()  # a second close is a no-op


@pytest.fixture
async def client(nn: FakeNameNode) -> AsyncIterator[TestClient[Any, Any]]:
    app = web.Application()
    add_routes(app, nn)  # type: ignore[arg-type]
    async with TestClient(TestServer(app)) as c:
        yield c


async def call(c: TestClient[Any, Any], method: str, url: str) -> tuple[int, Any]:
    async with c.request(method, "/webhdfs/v1" + url) as r:
        return r.status, await r.json(content_type=None)


async def test_namespace_ops_and_their_json(client: TestClient[Any, Any], nn: FakeNameNode) -> None:
    assert await call(client, "PUT", "/a/b?op=MKDIRS&user.name=hdfs") == (200, {"boolean": True})
    status, body = await call(client, "GET", "/a?op=LISTSTATUS&user.name=hdfs")
    [b] = body["FileStatuses"]["FileStatus"]
    assert (status, b["pathSuffix"], b["type"], b["permission"], b["owner"]) == (
        200, "b", "DIRECTORY", "755", "hdfs",
    )  # fmt: skip
    async with client.put("/webhdfs/v1/a/b?op=SETPERMISSION&permission=1777&user.name=hdfs") as r:
        assert r.status == 200
    _, body = await call(client, "GET", "/a/b?op=GETFILESTATUS")
    assert body["FileStatus"]["permission"] == "1777"
    _, body = await call(client, "PUT", "/a/b?op=RENAME&destination=/a/c&user.name=hdfs")
    assert body == {"boolean": True}
    _, body = await call(client, "GET", "/a?op=GETCONTENTSUMMARY")
    assert body["ContentSummary"]["directoryCount"] == 2
    # a page at a time after startAfter
    for name in ("d1", "d2", "d3"):
        await call(client, "PUT", f"/p/{name}?op=MKDIRS&user.name=hdfs")
    _, body = await call(client, "GET", "/p?op=LISTSTATUS_BATCH&startAfter=d1")
    names = [
        e["pathSuffix"]
        for e in body["DirectoryListing"]["partialListing"]["FileStatuses"]["FileStatus"]
    ]
    assert names == ["d2", "d3"] and body["DirectoryListing"]["remainingEntries"] == 0
    assert await call(client, "DELETE", "/p?op=DELETE&recursive=true&user.name=hdfs") == (
        200, {"boolean": True},
    )  # fmt: skip


async def test_refusals_are_remote_exceptions(client: TestClient[Any, Any]) -> None:
    await call(client, "PUT", "/private?op=MKDIRS&permission=700&user.name=hdfs")
    status, body = await call(client, "PUT", "/private/x?op=MKDIRS&user.name=bob")
    e = body["RemoteException"]
    assert (
        status == 403 and e["javaClassName"] == "org.apache.hadoop.security.AccessControlException"
    )
    assert "user=bob" in e["message"]
    status, body = await call(client, "GET", "/nothing?op=GETFILESTATUS")
    assert status == 404
    assert body["RemoteException"]["message"] == "File does not exist: /nothing"
    status, body = await call(client, "DELETE", "/private?op=DELETE&user.name=hdfs&recursive=no")
    assert status == 400 and '"recursive"' in body["RemoteException"]["message"]
    status, body = await call(client, "POST", "/x?op=MKDIRS")
    assert status == 400 and "PostOpParam.Op.MKDIRS" in body["RemoteException"]["message"]


async def test_a_standby_answers_standby_exception(
    client: TestClient[Any, Any], nn: FakeNameNode
) -> None:
    nn.standby = True
    status, body = await call(client, "GET", "/?op=LISTSTATUS")
    assert status == 403
    assert body["RemoteException"]["exception"] == "StandbyException"
    assert body["RemoteException"]["javaClassName"] == "org.apache.hadoop.ipc.StandbyException"


async def test_every_call_is_audited_as_webhdfs(
    client: TestClient[Any, Any], nn: FakeNameNode, tmp_path: Path
) -> None:
    await call(client, "PUT", "/au?op=MKDIRS&user.name=hdfs")
    await call(client, "GET", "/au?op=GETFILESTATUS&user.name=carol")
    await call(client, "PUT", "/au/x?op=MKDIRS")  # dr.who: refused
    assert nn.audit is not None
    nn.audit.close()
    lines = [
        line.split(": ", 1)[1] for line in (tmp_path / "hdfs-audit.log").read_text().splitlines()
    ]
    assert [line.split("\t")[3] for line in lines] == [
        "cmd=mkdirs",
        "cmd=getfileinfo",
        "cmd=mkdirs",
    ]
    assert all(line.endswith("proto=webhdfs") for line in lines)
    assert lines[0].startswith("allowed=true\tugi=hdfs (auth:SIMPLE)\tip=/127.0.0.1\t")
    assert lines[1].startswith("allowed=true\tugi=carol (auth:SIMPLE)")
    assert lines[2].startswith("allowed=false\tugi=dr.who (auth:SIMPLE)")


async def test_doas_is_a_proxy_request_held_to_the_proxy_user_rules(
    client: TestClient[Any, Any], nn: FakeNameNode, tmp_path: Path
) -> None:
    await call(client, "PUT", "/home?op=MKDIRS&permission=777&user.name=hdfs")
    rules = {"gateway": ProxyRule.parse("bob", "", "127.0.0.1", resolve=False)}
    set_proxy_policy(ProxyPolicy(rules, lambda _user: ()))
    try:
        status, body = await call(client, "PUT", "/home/b?op=MKDIRS&user.name=gateway&doas=bob")
        assert status == 200
        _, body = await call(client, "GET", "/home/b?op=GETFILESTATUS")
        assert body["FileStatus"]["owner"] == "bob"  # made as bob, not as the gateway
        status, body = await call(client, "PUT", "/home/c?op=MKDIRS&user.name=gateway&doas=carol")
        e = body["RemoteException"]
        assert status == 403 and e["exception"] == "AuthorizationException"
        assert e["message"] == "User: gateway is not allowed to impersonate carol"
        status, body = await call(client, "PUT", "/home/d?op=MKDIRS&user.name=mallory&doas=bob")
        assert status == 403 and "mallory is not allowed" in body["RemoteException"]["message"]
    finally:
        set_proxy_policy(NO_PROXIES)
    assert nn.audit is not None
    nn.audit.close()
    lines = (tmp_path / "hdfs-audit.log").read_text().splitlines()
    assert any(
        "ugi=bob (auth:PROXY) via gateway (auth:SIMPLE)" in x and "src=/home/b" in x for x in lines
    )
