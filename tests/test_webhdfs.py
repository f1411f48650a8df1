"""WebHDFS (design §W) judged by clients we did not write: curl as in HDFS's docs, the genuine
Hadoop WebHdfsFileSystem (FsShell with webhdfs:// from pyspark's jars), HdfsCLI's
InsecureClient and fsspec's WebHDFS, against one `qjm cluster` of 2 NameNodes and 2
DataNodes (manual HA, nn1 active at the start).
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hadoop_clients import (
    FsShellSession,
    HACluster,
    block_locations,
    check,
    jaxrs_media_types,
    user,
)
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # JVMs on a loaded machine


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster (nn1 active) with two DataNodes for the module."""
    c = HACluster(tmp_path_factory.mktemp("webhdfs") / "cluster", datanodes=2).up()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def fs(cluster: HACluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FsShellSession]:
    """FsShell in one JVM, with the JAX-RS media type parser the shaded client lacks."""
    work = tmp_path_factory.getbasetemp()
    session = FsShellSession(cluster.conf, work, classpath=[jaxrs_media_types(work)])
    try:
        yield session
    finally:
        session.close()


def http(cluster: HACluster, nn: str = "nn1") -> str:
    """The WebHDFS root URL of a NameNode."""
    return f"http://{cluster.info[nn]['http']}/webhdfs/v1"


def curl(*args: str, timeout: float = 60) -> tuple[int, dict[str, str], bytes]:
    """curl -s -i (no -L unless asked): the final status, its headers and the body."""
    r = subprocess.run(
        ["curl", "-s", "-i", "--path-as-is", *args], capture_output=True, timeout=timeout
    )
    assert r.returncode == 0, r.stderr
    raw = r.stdout
    # with -L every hop's head is printed; the last head is the final answer's
    while True:
        head, _, body = raw.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        if status in (100, 307) and body.startswith(b"HTTP/"):
            raw = body
            continue
        break
    headers = {}
    for line in head.decode("latin-1").split("\r\n")[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, body


def json_of(body: bytes) -> Any:
    """A JSON body."""
    return json.loads(body.decode())


def remote(body: bytes) -> tuple[str, str]:
    """A RemoteException body's javaClassName and message."""
    e = json_of(body)["RemoteException"]
    assert e["exception"] == e["javaClassName"].rsplit(".", 1)[-1]
    return e["javaClassName"], e["message"]


def audit_lines(cluster: HACluster, nn: str) -> list[str]:
    """nn's audit log lines."""
    path = cluster.dir / "data" / nn / "hdfs-audit.log"
    return path.read_text().splitlines() if path.exists() else []


def test_curl_as_in_hdfs_docs(cluster: HACluster, tmp_path: Path) -> None:
    base, me = http(cluster), user()
    status, headers, body = curl(f"{base}/?op=LISTSTATUS")
    assert status == 200 and "FileStatuses" in json_of(body)

    status, _, body = curl("-X", "PUT", f"{base}/docs/d?op=MKDIRS&permission=750&user.name={me}")
    assert (status, json_of(body)) == (200, {"boolean": True})

    data = os.urandom(300_000)
    local = tmp_path / "f"
    local.write_bytes(data)
    # step 1 alone: the NameNode's 307 to a DataNode's WebHDFS, which does not write yet
    status, headers, _ = curl("-X", "PUT", f"{base}/docs/d/f?op=CREATE&user.name={me}")
    assert status == 307
    location = urllib.parse.urlsplit(headers["location"])
    query = urllib.parse.parse_qs(location.query)
    assert location.path == "/webhdfs/v1/docs/d/f"
    assert query["op"] == ["CREATE"] and query["namenoderpcaddress"] == ["ns1"]
    assert query["user.name"] == [me] and query["overwrite"] == ["false"]
    assert location.netloc in {cluster.info[dn]["http"] for dn in ("dn1", "dn2")}
    # both steps, as the docs' curl -i -L -X PUT -T file
    status, headers, _ = curl(
        "-L", "-X", "PUT", "-T", str(local), f"{base}/docs/d/f?op=CREATE&user.name={me}"
    )
    assert status == 201 and headers["location"] == "hdfs://ns1/docs/d/f"

    status, _, body = curl("-L", f"{base}/docs/d/f?op=OPEN&user.name={me}")
    assert status == 200 and body == data
    status, _, body = curl(f"{base}/docs/d/f?op=OPEN&offset=7&noredirect=true&user.name={me}")
    to = urllib.parse.urlsplit(json_of(body)["Location"])
    assert status == 200 and urllib.parse.parse_qs(to.query)["offset"] == ["7"]
    status, _, body = curl("-L", f"{base}/docs/d/f?op=OPEN&offset=1000&length=5000&user.name={me}")
    assert status == 200 and body == data[1000:6000]
    # /docs/d is 750: HDFS's static web user dr.who (no user.name) may not go through it
    status, _, body = curl("-L", f"{base}/docs/d/f?op=OPEN")
    assert status == 403
    cls, msg = remote(body)
    assert cls == "org.apache.hadoop.security.AccessControlException" and "user=dr.who" in msg

    status, _, body = curl(f"{base}/docs/d/f?op=GETFILESTATUS&user.name={me}")
    st = json_of(body)["FileStatus"]
    assert status == 200
    assert set(st) >= {
        "accessTime", "blockSize", "childrenNum", "fileId", "group", "length",
        "modificationTime", "owner", "pathSuffix", "permission", "replication",
        "storagePolicy", "type",
    }  # fmt: skip
    assert (st["type"], st["length"], st["owner"], st["permission"], st["pathSuffix"]) == (
        "FILE", len(data), me, "644", "",
    )  # fmt: skip
    status, _, body = curl(f"{base}/docs?op=LISTSTATUS&user.name={me}")
    [d] = json_of(body)["FileStatuses"]["FileStatus"]
    assert (d["pathSuffix"], d["type"], d["permission"], d["childrenNum"]) == (
        "d",
        "DIRECTORY",
        "750",
        1,
    )
    status, _, body = curl(f"{base}/docs?op=GETCONTENTSUMMARY&user.name={me}")
    cs = json_of(body)["ContentSummary"]
    assert (cs["directoryCount"], cs["fileCount"], cs["length"], cs["quota"]) == (
        2,
        1,
        len(data),
        -1,
    )
    status, _, body = curl(f"{base}/?op=GETHOMEDIRECTORY&user.name=carol")
    assert json_of(body) == {"Path": "/user/carol"}

    # APPEND through a DataNode, RENAME, SETREPLICATION, SETOWNER, DELETE
    more = tmp_path / "more"
    more.write_bytes(b"appended")
    status, _, _ = curl(
        "-L", "-X", "POST", "-T", str(more), f"{base}/docs/d/f?op=APPEND&user.name={me}"
    )
    assert status == 200
    assert curl("-L", f"{base}/docs/d/f?op=OPEN&user.name={me}")[2] == data + b"appended"
    status, _, body = curl(
        "-X", "PUT", f"{base}/docs/d/f?op=RENAME&destination=/docs/g&user.name={me}"
    )
    assert json_of(body) == {"boolean": True}
    status, _, body = curl(
        "-X", "PUT", f"{base}/docs/g?op=SETREPLICATION&replication=2&user.name={me}"
    )
    assert json_of(body) == {"boolean": True}
    status, _, _ = curl(
        "-X", "PUT", f"{base}/docs/g?op=SETOWNER&owner=alice&group=staff&user.name={me}"
    )
    assert status == 200
    st = json_of(curl(f"{base}/docs/g?op=GETFILESTATUS&user.name={me}")[2])["FileStatus"]
    assert (st["owner"], st["group"], st["replication"]) == ("alice", "staff", 2)

    # the caller without user.name is HDFS's dr.who, and permissions hold for it
    status, _, body = curl("-X", "DELETE", f"{base}/docs?op=DELETE&recursive=true")
    assert status == 403
    cls, msg = remote(body)
    assert cls == "org.apache.hadoop.security.AccessControlException" and "user=dr.who" in msg
    status, _, body = curl("-X", "DELETE", f"{base}/docs?op=DELETE&recursive=true&user.name={me}")
    assert json_of(body) == {"boolean": True}
    status, _, body = curl(f"{base}/docs?op=GETFILESTATUS&user.name={me}")
    assert status == 404
    assert remote(body) == ("java.io.FileNotFoundException", "File does not exist: /docs")

    # every call went through the audit log, proto=webhdfs as HDFS writes it
    def audited() -> bool:
        lines = audit_lines(cluster, "nn1")
        return any("cmd=delete\tsrc=/docs" in x and "proto=webhdfs" in x for x in lines)

    wait_until("the DELETE audited", audited, timeout_s=10)
    lines = [x for x in audit_lines(cluster, "nn1") if "proto=webhdfs" in x]
    assert any("allowed=false\tugi=dr.who (auth:SIMPLE)" in x and "cmd=delete" in x for x in lines)
    assert any(f"ugi={me} " in x and "cmd=mkdirs\tsrc=/docs/d" in x for x in lines)
    # the DataNode creates the file over ClientProtocol as the caller, as HDFS's does
    assert any(
        f"ugi={me} " in x and "cmd=create\tsrc=/docs/d/f" in x and "proto=rpc" in x
        for x in audit_lines(cluster, "nn1")
    )
    assert any("cmd=rename\tsrc=/docs/d/f\tdst=/docs/g" in x for x in lines)


def test_fsshell_webhdfs_on_the_active(
    cluster: HACluster, fs: FsShellSession, tmp_path: Path
) -> None:
    web = f"webhdfs://{cluster.info['nn1']['http']}"
    data = os.urandom(3 * 1024 * 1024 + 77)
    local = tmp_path / "big"
    local.write_bytes(data)
    check(fs("-mkdir", "-p", f"{web}/java/d"))
    check(fs("-D", "dfs.blocksize=1048576", "-put", str(local), f"{web}/java/d/big"))
    out = check(fs("-ls", "-R", f"{web}/java"))
    assert f"{web}/java/d/big" in out and str(len(data)) in out
    r = fs.run_bytes("-cat", f"{web}/java/d/big", timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == data
    # the checksum over WebHDFS is the one the hdfs:// client computes from the DataNodes
    web_sum = check(fs("-checksum", f"{web}/java/d/big")).split("\t")[1:]
    rpc_sum = check(fs("-checksum", "hdfs://ns1/java/d/big")).split("\t")[1:]
    assert web_sum == rpc_sum and web_sum[0] == "MD5-of-2048MD5-of-512CRC32C"  # 4 blocks
    tail = tmp_path / "tail"
    tail.write_bytes(b"appended by WebHdfsFileSystem")
    check(fs("-appendToFile", str(tail), f"{web}/java/d/big"))
    r = fs.run_bytes("-cat", "hdfs://ns1/java/d/big", timeout=120)
    assert r.returncode == 0 and r.stdout == data + tail.read_bytes()
    check(fs("-touchz", f"{web}/java/empty"))
    web_sum = check(fs("-checksum", f"{web}/java/empty")).split("\t")[1:]
    assert web_sum == check(fs("-checksum", "hdfs://ns1/java/empty")).split("\t")[1:]
    assert web_sum[0] == "MD5-of-0MD5-of-0CRC32"
    out = check(fs("-rm", "-r", f"{web}/java"))
    assert "Deleted" in out
    assert fs("-test", "-e", "hdfs://ns1/java").returncode == 1


def test_python_clients(cluster: HACluster) -> None:
    import fsspec
    from hdfs import HdfsError, InsecureClient

    me = user()
    client = InsecureClient(f"http://{cluster.info['nn1']['http']}", user=me)
    data = os.urandom(700_000)
    client.write("/py/x.bin", data, overwrite=True)
    assert client.list("/py") == ["x.bin"]
    with client.read("/py/x.bin") as r:
        assert r.read() == data
    with client.read("/py/x.bin", offset=10, length=20) as r:
        assert r.read() == data[10:30]
    assert client.checksum("/py/x.bin")["algorithm"] == "MD5-of-0MD5-of-512CRC32C"
    assert client.delete("/py", recursive=True)
    with pytest.raises(HdfsError, match="File does not exist: /py"):
        client.status("/py")

    host, port = cluster.info["nn1"]["http"].rsplit(":", 1)
    wfs = fsspec.filesystem("webhdfs", host=host, port=int(port), user=me)
    wfs.mkdir("/fss")
    wfs.pipe("/fss/a.txt", b"hello webhdfs")
    assert wfs.ls("/fss", detail=False) == ["/fss/a.txt"]
    assert wfs.cat("/fss/a.txt") == b"hello webhdfs"
    assert wfs.info("/fss/a.txt")["size"] == 13
    wfs.rm("/fss", recursive=True)
    assert not wfs.exists("/fss")


@pytest.fixture(scope="module")
def small_file(cluster: HACluster, tmp_path_factory: pytest.TempPathFactory) -> str:
    """/bad-input/f, 10 bytes."""
    local = tmp_path_factory.mktemp("small") / "f"
    local.write_bytes(b"0123456789")
    url = f"{http(cluster)}/bad-input/f?op=CREATE&user.name={user()}"
    assert curl("-L", "-X", "PUT", "-T", str(local), url)[0] == 201
    return "/bad-input/f"


@pytest.mark.parametrize(
    ("method", "url", "status", "java_class", "says"),
    [
        ("GET", "/x?op=FOO", 400, "java.lang.IllegalArgumentException", "GetOpParam.Op.FOO"),
        ("PUT", "/x?op=OPEN", 400, "java.lang.IllegalArgumentException", "PutOpParam.Op.OPEN"),
        ("GET", "/x", 400, "java.lang.IllegalArgumentException", '"op": missing'),
        ("GET", "/bad?op=OPEN&offset=-1", 400, "java.lang.IllegalArgumentException", '"offset"'),
        ("GET", "/bad?op=OPEN&length=99999999999999999999", 400, "java.lang.IllegalArgumentException", '"length"'),
        ("GET", "/bad-input/f?op=OPEN&offset=9223372036854775807", 403, "java.io.IOException", "out of the range"),
        ("GET", "/../etc/passwd?op=GETFILESTATUS", 400, "org.apache.hadoop.fs.InvalidPathException", "'..'"),
        ("PUT", "/a/%2e%2e/b?op=MKDIRS", 400, "org.apache.hadoop.fs.InvalidPathException", "'..'"),
        ("GET", "/%ff%fe?op=GETFILESTATUS", 400, "java.lang.IllegalArgumentException", "not valid UTF-8"),
        ("PUT", "/bad?op=RENAME", 400, "java.lang.IllegalArgumentException", '"destination"'),
        ("PUT", "/bad?op=RENAME&destination=/x%ff", 400, "java.lang.IllegalArgumentException", "not valid UTF-8"),
        ("PUT", "/bad?op=SETPERMISSION&permission=rwx", 400, "java.lang.IllegalArgumentException", "octal"),
        ("DELETE", "/bad?op=DELETE&recursive=maybe", 400, "java.lang.IllegalArgumentException", '"recursive"'),
        ("GET", "/nowhere?op=LISTSTATUS", 404, "java.io.FileNotFoundException", "/nowhere"),
    ],
)  # fmt: skip
def test_bad_input_is_a_clear_remote_exception(
    cluster: HACluster,
    small_file: str,
    method: str,
    url: str,
    status: int,
    java_class: str,
    says: str,
) -> None:
    base = http(cluster)
    got, _, body = curl(
        "-X", method, f"{base}{url}&user.name={user()}" if "?" in url else f"{base}{url}"
    )
    assert got == status, body
    cls, msg = remote(body)
    assert cls == java_class and says in msg, msg
    # nothing wedged: the NameNode answers the next request
    assert curl(f"{base}/?op=GETFILESTATUS")[0] == 200


def test_a_datanode_refuses_requests_no_namenode_sent(cluster: HACluster) -> None:
    dn = f"http://{cluster.info['dn1']['http']}/webhdfs/v1"
    status, _, body = curl(f"{dn}/x?op=OPEN&namenoderpcaddress=evil.example:8020")
    assert status == 400 and "namenoderpcaddress" in remote(body)[1]
    status, _, body = curl(f"{dn}/x?op=LISTSTATUS&namenoderpcaddress=ns1")
    assert status == 400 and "answered by the NameNode" in remote(body)[1]
    status, _, body = curl(f"{dn}/none?op=OPEN&namenoderpcaddress=ns1")
    assert status == 404 and remote(body)[0] == "java.io.FileNotFoundException"


def test_standby_answers_standby_exception_and_the_java_client_fails_over(
    cluster: HACluster, fs: FsShellSession, tmp_path: Path
) -> None:
    status, _, body = curl(f"{http(cluster, 'nn2')}/?op=LISTSTATUS")
    assert status == 403
    cls, msg = remote(body)
    assert cls == "org.apache.hadoop.ipc.StandbyException"
    assert msg.startswith("Operation category READ is not supported in state standby")
    status, _, body = curl("-X", "PUT", f"{http(cluster, 'nn2')}/s?op=CREATE&user.name={user()}")
    assert status == 403 and remote(body)[0] == "org.apache.hadoop.ipc.StandbyException"

    data = os.urandom(100_000)
    local = tmp_path / "ha"
    local.write_bytes(data)
    # webhdfs://ns1: the client finds the active among dfs.namenode.http-address.ns1.*
    check(fs("-put", str(local), "webhdfs://ns1/ha"))
    cluster.failover("nn1", "nn2")
    try:
        r = fs.run_bytes("-cat", "webhdfs://ns1/ha", timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout == data
        check(fs("-mkdir", "webhdfs://ns1/after-failover"))
        assert curl(f"{http(cluster, 'nn2')}/after-failover?op=GETFILESTATUS")[0] == 200
        status, _, body = curl(f"{http(cluster, 'nn1')}/?op=LISTSTATUS")
        assert status == 403 and remote(body)[0] == "org.apache.hadoop.ipc.StandbyException"
    finally:
        cluster.failover("nn2", "nn1")


def test_a_dead_datanode_is_left_out_of_a_webhdfs_write_and_read(
    cluster: HACluster, tmp_path: Path
) -> None:
    """Last in the module: it kills a DataNode. The NameNode does not know yet, so the new
    block's pipeline names it; the writing DataNode abandons that block and asks for one
    without it, and a read skips the dead replica."""
    me, base = user(), http(cluster)
    before = os.urandom(200_000)
    (tmp_path / "before").write_bytes(before)
    url = f"{base}/dead/before?op=CREATE&user.name={me}"
    assert curl("-L", "-X", "PUT", "-T", str(tmp_path / "before"), url)[0] == 201

    def on_both() -> bool:  # both DataNodes hold /dead/before's block
        [b] = block_locations(cluster.info["nn1"]["rpc"], "/dead/before").blocks
        return len(b.locs) == 2

    wait_until("/dead/before on both DataNodes", on_both, timeout_s=30)
    status, headers, _ = curl("-X", "PUT", f"{base}/dead/after?op=CREATE&user.name={me}")
    assert status == 307
    writer = urllib.parse.urlsplit(headers["location"]).netloc
    [other] = [dn for dn in ("dn1", "dn2") if cluster.info[dn]["http"] != writer]
    [writer_name] = [dn for dn in ("dn1", "dn2") if cluster.info[dn]["http"] == writer]
    cluster.kill9(other)

    after = os.urandom(300_000)
    (tmp_path / "after").write_bytes(after)
    status, _, body = curl("-X", "PUT", "-T", str(tmp_path / "after"), headers["location"])
    assert status == 201, body
    log = (cluster.dir / "logs" / f"{writer_name}.log").read_text()
    assert "WebHDFS write of /dead/after: pipeline setup failed (try 1 of 3)" in log
    dn = f"http://{writer}/webhdfs/v1"
    for path, data in (("/dead/after", after), ("/dead/before", before)):
        status, _, body = curl(f"{dn}{path}?op=OPEN&namenoderpcaddress=ns1&user.name={me}")
        assert status == 200 and body == data, path
    [block] = block_locations(cluster.info["nn1"]["rpc"], "/dead/after").blocks
    assert [loc.id.infoPort for loc in block.locs] == [int(writer.rsplit(":", 1)[1])]
