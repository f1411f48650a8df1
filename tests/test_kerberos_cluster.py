"""A Kerberos cluster (design §S): real KDC, every daemon on its keytab, judged by the
genuine Hadoop client, and the attacks of a stranger and of a mere user refused."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ha_cluster import auto_cluster, namenode_addresses, wait_single_active
from qjm.cluster.hadoop_conf import hadoop_jars
from qjm.config import load_config
from qjm.ipc import IpcClient, RemoteError, RpcConnectionError
from qjm.ipc.login import logged_in
from qjm.protocol.qjournal import QJOURNAL_PROTOCOL

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """ZooKeeper, 3 JournalNodes, 2 NameNodes with ZKFCs and 2 DataNodes, all on Kerberos."""
    with auto_cluster(tmp_path_factory.mktemp("krb") / "c", datanodes=2, kerberos=True) as c:
        yield c


def java(
    cluster: dict[str, Any], ccache: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """The genuine FsShell with the cluster's hadoop-conf, its krb5.conf and ticket cache."""
    kdc = cluster["kdc"]
    env = {**os.environ, "KRB5CCNAME": f"FILE:{ccache}", "KRB5_CONFIG": kdc["krb5_conf"]}
    argv = [
        "java",
        "-XX:TieredStopAtLevel=1",
        f"-Djava.security.krb5.conf={kdc['krb5_conf']}",
        "-Dsun.security.krb5.disableReferrals=true",
        "-cp",
        f"{cluster['hadoop_conf']}:{hadoop_jars()}/*",
        "org.apache.hadoop.fs.FsShell",
        *args,
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_genuine_client_with_a_ticket_writes_and_reads(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    user = cluster["kdc"]["user_ccache"]
    local = tmp_path / "hello.txt"
    local.write_text("kerberos hello\n")
    r = java(cluster, user, "-mkdir", "-p", "/secure")
    assert r.returncode == 0, r.stderr
    r = java(cluster, user, "-put", str(local), "/secure/hello.txt")
    assert r.returncode == 0, r.stderr
    r = java(cluster, user, "-cat", "/secure/hello.txt")
    assert r.returncode == 0 and r.stdout == "kerberos hello\n", r.stderr
    r = java(cluster, user, "-ls", "/secure")
    assert r.returncode == 0 and "/secure/hello.txt" in r.stdout, r.stderr


def test_the_genuine_client_without_a_ticket_is_refused(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    r = java(cluster, str(tmp_path / "no-such-cache"), "-ls", "/")
    assert r.returncode != 0
    # Hadoop's own refusal: the server offers Kerberos alone and the client has no ticket
    assert (
        "org.apache.hadoop.security.AccessControlException: Client cannot authenticate "
        "via:[KERBEROS]" in r.stderr
    ), r.stderr[-2000:]


def test_a_user_ticket_cannot_write_the_journal(cluster: dict[str, Any]) -> None:
    cfg = load_config(cluster["config"])
    jn = next(d for d in cluster.values() if isinstance(d, dict) and d.get("kind") == "journalnode")

    async def attempt() -> str:
        from qjm.protocol.qjournal_pb2 import (
            GetJournalStateRequestProto,
            GetJournalStateResponseProto,
            JournalIdProto,
        )

        client = IpcClient(jn["rpc"], QJOURNAL_PROTOCOL)
        try:
            await client.call(
                "getJournalState",
                GetJournalStateRequestProto(jid=JournalIdProto(identifier=cfg.journal_id)),
                GetJournalStateResponseProto,
                timeout=20,
            )
        except RpcConnectionError as e:
            return str(e)
        finally:
            await client.close()
        return "answered"

    with logged_in(cfg.security, cluster["kdc"]["user_ccache"]):
        said = asyncio.run(attempt())
    assert (
        "AuthorizationException" in said
        and "expected client Kerberos principal is nn/_HOST" in said
    )


def zkfc_of(cluster: dict[str, Any], namenode: str) -> str:
    """The RPC address of the ZKFC that controls namenode."""
    return next(
        d["rpc"]
        for d in cluster.values()
        if isinstance(d, dict) and d.get("kind") == "zkfc" and d.get("namenode") == namenode
    )


def test_a_user_may_not_change_ha_state_and_the_zkfc_may(cluster: dict[str, Any]) -> None:
    from qjm.ha.ZKFCProtocol_pb2 import CedeActiveRequestProto, CedeActiveResponseProto
    from qjm.namenode.proto.HAServiceProtocol_pb2 import (
        HAStateChangeRequestInfoProto,
        TransitionToStandbyRequestProto,
        TransitionToStandbyResponseProto,
    )
    from qjm.namenode.protocols import HA_SERVICE_PROTOCOL

    cfg = load_config(cluster["config"])
    active = wait_single_active_secure(cluster, cfg)

    async def attempts() -> list[str]:
        said = []
        zkfc = IpcClient(zkfc_of(cluster, active), "org.apache.hadoop.ha.ZKFCProtocol")
        nn = IpcClient(namenode_addresses(cluster)[active], HA_SERVICE_PROTOCOL)
        try:
            for client, method, request, response in (
                (
                    zkfc,
                    "cedeActive",
                    CedeActiveRequestProto(millisToCede=60_000),
                    CedeActiveResponseProto,
                ),
                (
                    nn,
                    "transitionToStandby",
                    TransitionToStandbyRequestProto(
                        reqInfo=HAStateChangeRequestInfoProto(reqSource=1)
                    ),
                    TransitionToStandbyResponseProto,
                ),
            ):
                try:
                    await client.call(method, request, response, timeout=20)
                    said.append("done")
                except RemoteError as e:
                    said.append(f"{e.class_name}: {e.message}")
        finally:
            await zkfc.close()
            await nn.close()
        return said

    with logged_in(cfg.security, cluster["kdc"]["user_ccache"]):
        cede, standby = asyncio.run(attempts())
    assert cede.startswith("org.apache.hadoop.security.AccessControlException"), cede
    assert standby.startswith("org.apache.hadoop.security.AccessControlException"), standby
    assert wait_single_active_secure(cluster, cfg) == active  # nothing changed


def wait_single_active_secure(
    cluster: dict[str, Any], cfg: Any, exclude: tuple[str, ...] = ()
) -> str:
    """wait_single_active, asking the NameNodes with the admin's (NameNode principal's) ticket."""
    with logged_in(cfg.security, cluster["kdc"]["admin_ccache"]):
        return wait_single_active(cluster, 60, exclude=exclude)


def test_the_genuine_client_works_through_a_failover(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    cfg = load_config(cluster["config"])
    user = cluster["kdc"]["user_ccache"]
    local = tmp_path / "before.txt"
    local.write_text("written before the failover\n")
    assert java(cluster, user, "-put", "-f", str(local), "/secure-before.txt").returncode == 0
    old = wait_single_active_secure(cluster, cfg)
    os.kill(cluster[old]["pid"], signal.SIGKILL)
    new = wait_single_active_secure(cluster, cfg, exclude=(old,))
    assert new != old
    r = java(cluster, user, "-cat", "/secure-before.txt")
    assert r.returncode == 0 and r.stdout == "written before the failover\n", r.stderr[-2000:]
    r = java(cluster, user, "-mkdir", "/after-failover")
    assert r.returncode == 0, r.stderr[-2000:]
