"""A Kerberos cluster (design §S): real KDC, every daemon on its keytab, judged by the
genuine Hadoop client, and the attacks of a stranger and of a mere user refused."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ha_cluster import auto_cluster, namenode_addresses, wait_single_active
from hadoop_clients import FsShellSession
from qjm.cluster.hadoop_conf import hadoop_jars
from qjm.config import ProxyUserConfig, load_config
from qjm.hdfs.transfer_sasl import TransferProtection
from qjm.ipc import IpcClient, RemoteError, RpcConnectionError
from qjm.ipc.login import logged_in
from qjm.ipc.sasl import ClientSecurity, TokenCredential
from qjm.namenode.delegation import parse_identifier
from qjm.namenode.token_file import encode_token_file, ha_service
from qjm.protocol.qjournal import QJOURNAL_PROTOCOL
from qjm.security.gss import layers_of
from qjm.security.users import os_user

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """ZooKeeper, 3 JournalNodes, 2 NameNodes with ZKFCs and 2 DataNodes, all on Kerberos;
    the user may act for alice, from this host only (design §S.14)."""
    proxies = {os_user(): ProxyUserConfig(os_user(), users="alice", hosts="127.0.0.1")}
    directory = tmp_path_factory.mktemp("krb") / "c"
    with auto_cluster(directory, datanodes=2, kerberos=True, proxyusers=proxies) as c:
        yield c


@pytest.fixture(scope="module")
def shell(
    cluster: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FsShellSession]:
    """The genuine FsShell in one JVM, logged in from the user's ticket cache."""
    kdc = cluster["kdc"]
    session = FsShellSession(
        Path(cluster["hadoop_conf"]),
        tmp_path_factory.mktemp("fsshell"),
        jvm_options=[
            f"-Djava.security.krb5.conf={kdc['krb5_conf']}",
            "-Dsun.security.krb5.disableReferrals=true",
        ],
        env={"KRB5CCNAME": f"FILE:{kdc['user_ccache']}", "KRB5_CONFIG": kdc["krb5_conf"]},
    )
    yield session
    session.close()


def java(
    cluster: dict[str, Any],
    ccache: str,
    *args: str,
    timeout: float = 120,
    token_file: Path | None = None,
    proxy_user: str = "",
) -> subprocess.CompletedProcess[str]:
    """The genuine FsShell with the cluster's hadoop-conf, its krb5.conf and ticket cache
    (and the delegation tokens of token_file, and acting for proxy_user, where given)."""
    kdc = cluster["kdc"]
    env = {**os.environ, "KRB5CCNAME": f"FILE:{ccache}", "KRB5_CONFIG": kdc["krb5_conf"]}
    if proxy_user:
        env["HADOOP_PROXY_USER"] = proxy_user
    if token_file is not None:
        env["HADOOP_TOKEN_FILE_LOCATION"] = str(token_file)
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
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    local = tmp_path / "hello.txt"
    local.write_text("kerberos hello\n")
    r = shell("-mkdir", "-p", "/secure")
    assert r.returncode == 0, r.stderr
    r = shell("-put", str(local), "/secure/hello.txt")
    assert r.returncode == 0, r.stderr
    r = shell("-cat", "/secure/hello.txt")
    assert r.returncode == 0 and r.stdout == "kerberos hello\n", r.stderr
    r = shell("-ls", "/secure")
    assert r.returncode == 0 and "/secure/hello.txt" in r.stdout, r.stderr


def test_the_genuine_client_without_a_ticket_is_refused(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    r = java(cluster, str(tmp_path / "no-such-cache"), "-ls", "/")
    assert r.returncode != 0
    # Hadoop's own refusal: the server offers Kerberos alone and the client has no ticket
    assert (
        "org.apache.hadoop.security.AccessControlException: Client cannot authenticate "
        "via:[TOKEN, KERBEROS]" in r.stderr
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


def fetch_token(cluster: dict[str, Any], ccache: str, renewer: str) -> TokenCredential:
    """A delegation token from the active NameNode, asked for with ccache's Kerberos ticket,
    named for the nameservice as an HA client names it."""
    from qjm.hdfs.proto import Security_pb2 as sec
    from qjm.namenode.protocols import CLIENT_PROTOCOL

    cfg = load_config(cluster["config"])
    active = wait_single_active_secure(cluster, cfg)

    async def get() -> TokenCredential:
        client = IpcClient(namenode_addresses(cluster)[active], CLIENT_PROTOCOL)
        try:
            response = await client.call(
                "getDelegationToken",
                sec.GetDelegationTokenRequestProto(renewer=renewer),
                sec.GetDelegationTokenResponseProto,
                timeout=20,
            )
        finally:
            await client.close()
        t = response.token
        return TokenCredential(t.identifier, t.password, t.kind, ha_service(cfg.nameservice))

    with logged_in(cfg.security, ccache):
        return asyncio.run(get())


def token_call(
    cluster: dict[str, Any], security: Any, method: str, request: Any, response: Any
) -> Any:
    """One ClientProtocol call to the active NameNode as security (a token or a ticket);
    the answer, or the RemoteError's "class: message"."""
    from qjm.namenode.protocols import CLIENT_PROTOCOL

    active = wait_single_active_secure(cluster, load_config(cluster["config"]))

    async def call() -> Any:
        client = IpcClient(namenode_addresses(cluster)[active], CLIENT_PROTOCOL, security=security)
        try:
            return await client.call(method, request, response, timeout=20)
        except RemoteError as e:
            return f"{e.class_name}: {e.message}"
        finally:
            await client.close()

    return asyncio.run(call())


def token_security(cluster: dict[str, Any], token: TokenCredential) -> ClientSecurity:
    """Our IpcClient's login with a delegation token only (no Kerberos credentials)."""
    cfg = load_config(cluster["config"])
    owner = parse_identifier(token.identifier).owner
    return ClientSecurity(
        credentials=None,
        principal=owner,
        realm=cfg.security.realm,
        server_principals={},
        layers=layers_of(cfg.security.rpc_protection),
        token=token,
    )


def graceful_failover(cluster: dict[str, Any]) -> tuple[str, str]:
    """Move the active role to the standby through its ZKFC (the admin's ticket): (old, new)."""
    from qjm.ha.ZKFCProtocol_pb2 import GracefulFailoverRequestProto, GracefulFailoverResponseProto

    cfg = load_config(cluster["config"])
    old = wait_single_active_secure(cluster, cfg)
    target = next(name for name in namenode_addresses(cluster) if name != old)

    async def fail_over() -> None:
        zkfc = IpcClient(zkfc_of(cluster, target), "org.apache.hadoop.ha.ZKFCProtocol")
        try:
            await zkfc.call(
                "gracefulFailover",
                GracefulFailoverRequestProto(),
                GracefulFailoverResponseProto,
                timeout=60,
            )
        finally:
            await zkfc.close()

    with logged_in(cfg.security, cluster["kdc"]["admin_ccache"]):
        asyncio.run(fail_over())
    return old, wait_single_active_secure(cluster, cfg, exclude=(old,))


def test_the_genuine_client_with_only_a_delegation_token_reads_through_a_failover(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    local = tmp_path / "dt.txt"
    local.write_text("read with a delegation token\n")
    assert shell("-put", "-f", str(local), "/secure/dt.txt").returncode == 0
    token = fetch_token(cluster, cluster["kdc"]["user_ccache"], os_user())
    assert token.kind == "HDFS_DELEGATION_TOKEN"
    ident = parse_identifier(token.identifier)
    assert ident.owner == f"{os_user()}@{cluster['kdc']['realm']}" and ident.renewer == os_user()
    assert ident.max_date - ident.issue_date == 7 * 86_400_000
    token_file = tmp_path / "tokens"
    token_file.write_bytes(encode_token_file([token]))
    kdc = cluster["kdc"]
    with_token = FsShellSession(
        Path(cluster["hadoop_conf"]),
        tmp_path / "jvm",
        jvm_options=[f"-Djava.security.krb5.conf={kdc['krb5_conf']}"],
        env={  # no ticket at all: only the token file
            "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
            "KRB5_CONFIG": kdc["krb5_conf"],
            "HADOOP_TOKEN_FILE_LOCATION": str(token_file),
        },
    )
    try:
        r = with_token("-cat", "/secure/dt.txt")
        assert r.returncode == 0 and r.stdout == "read with a delegation token\n", r.stderr
        old, new = graceful_failover(cluster)
        assert new != old
        # the new active learned the token from the edit log, never from the client
        r = with_token("-ls", "/secure")
        assert r.returncode == 0 and "/secure/dt.txt" in r.stdout, r.stderr[-2000:]
        r = with_token("-cat", "/secure/dt.txt")
        assert r.returncode == 0 and r.stdout == "read with a delegation token\n", r.stderr
    finally:
        with_token.close()
    # hdfs-native, with the token file and no ticket, reads the file too: its DIGEST-MD5
    # seals with 3des, the other cipher the NameNode offers (design §S.10)
    reader = (
        "import sys, hdfs_native\n"
        "from qjm.cluster.hadoop_conf import read_site\n"
        "d = sys.argv[1]\n"
        "cfg = read_site(d + '/core-site.xml') | read_site(d + '/hdfs-site.xml')\n"
        "c = hdfs_native.Client(cfg['fs.defaultFS'], config=cfg)\n"
        "with c.read('/secure/dt.txt') as f:\n"
        "    sys.stdout.write(bytes(f.read()).decode())\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", reader, cluster["hadoop_conf"]],
        env={
            **os.environ,
            "KRB5CCNAME": f"FILE:{tmp_path / 'no-ticket'}",
            "KRB5_CONFIG": kdc["krb5_conf"],
            "HADOOP_TOKEN_FILE_LOCATION": str(token_file),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stdout == "read with a delegation token\n", r.stderr[-2000:]
    # the audit log names the token's owner and how it authenticated
    cfg = load_config(cluster["config"])
    audit = (Path(cfg.namenode_named(new).name_dir) / "hdfs-audit.log").read_text()
    assert f"ugi={ident.owner} (auth:TOKEN)" in audit


def test_a_cancelled_or_forged_token_is_refused_and_a_token_gets_no_token(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    from qjm.hdfs.proto import Security_pb2 as sec
    from qjm.namenode.delegation import identifier_bytes
    from qjm.namenode.proto.ClientNamenodeProtocol_pb2 import (
        GetFileInfoRequestProto,
        GetFileInfoResponseProto,
    )

    user = cluster["kdc"]["user_ccache"]
    token = fetch_token(cluster, user, os_user())
    as_token = token_security(cluster, token)
    # a token-authenticated caller (our client, sealed with DIGEST-MD5) reads, but gets no
    # token and renews none
    status = token_call(
        cluster,
        as_token,
        "getFileInfo",
        GetFileInfoRequestProto(src="/"),
        GetFileInfoResponseProto,
    )
    assert not isinstance(status, str) and status.HasField("fs"), status
    said = token_call(
        cluster,
        as_token,
        "getDelegationToken",
        sec.GetDelegationTokenRequestProto(renewer=os_user()),
        sec.GetDelegationTokenResponseProto,
    )
    assert said == (
        "java.io.IOException: Delegation Token can be issued only with kerberos or web "
        "authentication"
    ), said
    proto = sec.TokenProto(
        identifier=token.identifier, password=token.password, kind=token.kind, service=""
    )
    said = token_call(
        cluster,
        as_token,
        "renewDelegationToken",
        sec.RenewDelegationTokenRequestProto(token=proto),
        sec.RenewDelegationTokenResponseProto,
    )
    assert "can be renewed only with kerberos" in said, said
    # its renewer renews it with a ticket; another user (the NameNode's) may not
    cfg = load_config(cluster["config"])
    with logged_in(cfg.security, user) as ticket:
        renewed = token_call(
            cluster,
            ticket,
            "renewDelegationToken",
            sec.RenewDelegationTokenRequestProto(token=proto),
            sec.RenewDelegationTokenResponseProto,
        )
    assert not isinstance(renewed, str), renewed
    ident = parse_identifier(token.identifier)
    assert renewed.newExpiryTime > ident.issue_date
    with logged_in(cfg.security, cluster["kdc"]["admin_ccache"]) as admin:
        said = token_call(
            cluster,
            admin,
            "renewDelegationToken",
            sec.RenewDelegationTokenRequestProto(token=proto),
            sec.RenewDelegationTokenResponseProto,
        )
    assert said.startswith("org.apache.hadoop.security.AccessControlException: nn tries to "), said
    # forged: the same password on an identifier naming the superuser as owner
    forged = TokenCredential(
        identifier_bytes(replace(ident, owner=f"nn/localhost@{cluster['kdc']['realm']}")),
        token.password,
        token.kind,
        token.service,
    )
    # cancelled by its owner
    with logged_in(cfg.security, user) as ticket:
        cancelled = token_call(
            cluster,
            ticket,
            "cancelDelegationToken",
            sec.CancelDelegationTokenRequestProto(token=proto),
            sec.CancelDelegationTokenResponseProto,
        )
    assert not isinstance(cancelled, str), cancelled
    for name, bad in (("cancelled", token), ("forged", forged)):
        path = tmp_path / name
        path.write_bytes(encode_token_file([bad]))
        r = java(cluster, str(tmp_path / "no-ticket"), "-ls", "/secure", token_file=path)
        assert r.returncode != 0, (name, r.stdout)
        # FsShell prints the message of Hadoop's InvalidToken
        assert "ls: Token for real user: , can't be found in cache" in r.stderr, (
            name,
            r.stderr[-2000:],
        )
        said = token_call(
            cluster,
            token_security(cluster, bad),
            "getFileInfo",
            GetFileInfoRequestProto(src="/secure"),
            GetFileInfoResponseProto,
        )
        assert said == (
            "org.apache.hadoop.security.token.SecretManager$InvalidToken: Token for real user: "
            ", can't be found in cache"
        ), (name, said)


def test_the_genuine_client_works_through_a_failover(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    cfg = load_config(cluster["config"])
    local = tmp_path / "before.txt"
    local.write_text("written before the failover\n")
    assert shell("-put", "-f", str(local), "/secure-before.txt").returncode == 0
    old = wait_single_active_secure(cluster, cfg)
    os.kill(cluster[old]["pid"], signal.SIGKILL)
    new = wait_single_active_secure(cluster, cfg, exclude=(old,))
    assert new != old
    r = shell("-cat", "/secure-before.txt")
    assert r.returncode == 0 and r.stdout == "written before the failover\n", r.stderr[-2000:]
    r = shell("-mkdir", "/after-failover")
    assert r.returncode == 0, r.stderr[-2000:]


def located(cluster: dict[str, Any], cfg: Any, path: str) -> Any:
    """The first LocatedBlockProto of path, from the active NameNode, asked with the user's
    ticket."""
    from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
    from qjm.namenode.protocols import CLIENT_PROTOCOL

    active = wait_single_active_secure(cluster, cfg)

    async def ask() -> Any:
        client = IpcClient(namenode_addresses(cluster)[active], CLIENT_PROTOCOL)
        try:
            request = cn.GetBlockLocationsRequestProto(src=path, offset=0, length=1 << 40)
            answer = await client.call(
                "getBlockLocations", request, cn.GetBlockLocationsResponseProto, timeout=20
            )
        finally:
            await client.close()
        return answer.locations.blocks[0]

    with logged_in(cfg.security, cluster["kdc"]["user_ccache"]):
        return asyncio.run(ask())


def test_block_tokens_survive_a_failover_and_a_strangers_are_refused(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    """Design §S.9: after the failover the new active's tokens read (the DataNodes hold
    its keys); an empty, a forged, another block's token, and a READ token used to append,
    are each refused ERROR_ACCESS_TOKEN and the replica is unchanged."""
    from qjm.datanode import transfer_client as tc
    from qjm.datanode.sasl_streams import SaslTransferError
    from qjm.hdfs.proto import datatransfer_pb2 as dt
    from qjm.namenode.block_tokens import key_id_range
    from qjm.security.block_token import AccessMode, Token, decode_identifier

    cfg = load_config(cluster["config"])
    assert cfg.security.block_tokens
    payload = bytes(range(256)) * 40
    for name in ("tokens.bin", "other.bin"):
        (tmp_path / name).write_bytes(payload)
        r = shell("-put", "-f", str(tmp_path / name), f"/secure/{name}")
        assert r.returncode == 0, r.stderr[-2000:]
    lb, other = (
        located(cluster, cfg, "/secure/tokens.bin"),
        located(cluster, cfg, "/secure/other.bin"),
    )
    ident = decode_identifier(lb.blockToken.identifier)
    assert lb.blockToken.kind == "HDFS_BLOCK_TOKEN" and ident.modes == {AccessMode.READ}
    active = wait_single_active_secure(cluster, cfg)
    start, size = key_id_range(list(cfg.namenodes).index(active), len(cfg.namenodes))
    assert start <= ident.key_id < start + size  # signed by the active, after the failover
    # each DataNode holds keys of both NameNodes, each in its NameNode's range
    code, body = curl(
        cluster, cluster["kdc"]["user_ccache"], f"http://{http_of(cluster, 'datanode')}/status"
    )
    assert code == 200, body[:500]
    held = [k for ids in json.loads(body)["block_keys"].values() for k in ids]
    for index in range(len(cfg.namenodes)):
        first, n = key_id_range(index, len(cfg.namenodes))
        assert any(first <= k < first + n for k in held), (index, held)
    block = tc.block_from_proto(lb.b)
    node = lb.locs[0]

    def token(t: Any) -> Token:
        return Token(t.identifier, t.password, t.kind, t.service)

    # SASL on data transfer (design §S.12): the handshake takes the op's token too
    protection = TransferProtection.of(cfg.security.data_transfer_protection)

    def read(t: Token | None) -> bytes:
        return asyncio.run(
            tc.read_block(
                node, block, 0, len(payload), token=t, timeout_s=20, protection=protection
            )
        )

    good = token(lb.blockToken)
    assert read(good) == payload
    forged = Token(good.identifier, bytes([good.password[0] ^ 1]) + good.password[1:])
    # no token, or a forged one, fails the SASL handshake before any op (design §S.12)
    for stranger, said in (
        (None, "Missing username"),  # the empty token: an empty username
        (forged, "Mismatched response"),
    ):
        with pytest.raises(SaslTransferError, match="refused the SASL handshake") as serr:
            read(stranger)
        assert said in str(serr.value)
    # a genuine token of another block passes the handshake; the op's check refuses it
    with pytest.raises(tc.BlockReadError, match="ERROR_ACCESS_TOKEN") as err:
        read(token(other.blockToken))
    assert "doesn't apply to block" in str(err.value)

    async def append_with_a_read_token() -> None:
        await tc.PipelineWriter.open(
            [node],
            block,
            client_name="stranger",
            stage=tc.Stage.PIPELINE_SETUP_APPEND,
            latest_generation_stamp=block.generation_stamp + 1,
            offset=len(payload),
            timeout_s=20,
            token=good,
            protection=protection,
        )

    with pytest.raises(tc.BlockWriteError, match="doesn't have WRITE permission") as werr:
        asyncio.run(append_with_a_read_token())
    assert werr.value.status == dt.ERROR_ACCESS_TOKEN
    assert read(good) == payload  # unchanged: same bytes, same generation stamp
    assert tc.block_from_proto(located(cluster, cfg, "/secure/tokens.bin").b) == block


def curl(cluster: dict[str, Any], ccache: str | None, *args: str) -> tuple[int, str]:
    """curl's HTTP status and body: with --negotiate and ccache's ticket, or without Kerberos."""
    env = {**os.environ, "KRB5_CONFIG": cluster["kdc"]["krb5_conf"]}
    argv = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "30"]
    if ccache is not None:
        env["KRB5CCNAME"] = f"FILE:{ccache}"
        argv += ["--negotiate", "-u", ":"]
    r = subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=60)
    body, _, code = r.stdout.rpartition("\n")
    return int(code or 0), body


def http_of(cluster: dict[str, Any], kind: str) -> str:
    """localhost:port of the HTTP of a running daemon of kind (the active NameNode for
    namenode): a URL names the host whose HTTP principal curl asks a ticket for."""
    if kind == "namenode":
        name = wait_single_active_secure(cluster, load_config(cluster["config"]))
        address = str(cluster[name]["http"])
    else:
        address = next(
            d["http"] for d in cluster.values() if isinstance(d, dict) and d.get("kind") == kind
        )
    return "localhost:" + address.rpartition(":")[2]


@pytest.mark.parametrize("kind", ["namenode", "journalnode", "datanode"])
def test_every_http_port_asks_for_spnego_and_serves_a_ticket_holder(
    cluster: dict[str, Any], kind: str
) -> None:
    url = f"http://{http_of(cluster, kind)}/status"
    code, body = curl(cluster, None, "-i", url)
    assert code == 401 and "WWW-Authenticate: Negotiate" in body, body[:500]
    code, body = curl(cluster, cluster["kdc"]["user_ccache"], url)
    assert code == 200 and body.lstrip().startswith("{"), body[:500]


@pytest.mark.parametrize("kind", ["namenode", "journalnode", "datanode"])
def test_logs_are_for_the_administrators_and_jmx_and_conf_for_any_ticket(
    cluster: dict[str, Any], kind: str
) -> None:
    """design §N.11: the launcher names its user in dfs.cluster.administrators; the
    NameNode's principal (short name nn) is not one; /jmx and /conf need only a ticket."""
    address = http_of(cluster, kind)
    user, other = cluster["kdc"]["user_ccache"], cluster["kdc"]["admin_ccache"]
    code, body = curl(cluster, user, f"http://{address}/logs/")
    assert code == 200 and ".log" in body, body[:300]
    code, body = curl(cluster, other, f"http://{address}/logs/")
    assert code == 403 and "User nn is unauthorized to access this page." in body, body[:300]
    assert curl(cluster, None, f"http://{address}/logs/")[0] == 401
    for ccache in (user, other):
        code, body = curl(cluster, ccache, f"http://{address}/jmx?qry=Hadoop:*")
        assert code == 200 and json.loads(body)["beans"], body[:300]
        code, body = curl(cluster, ccache, f"http://{address}/conf?format=json")
        keys = {p["key"]: p["value"] for p in json.loads(body)["properties"]}
        assert code == 200 and keys["hadoop.security.authentication"] == "kerberos"
        assert keys["dfs.cluster.administrators"] == os_user()


def test_a_user_cannot_read_edits_or_forge_an_image(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    user = cluster["kdc"]["user_ccache"]
    cfg = load_config(cluster["config"])
    jn = http_of(cluster, "journalnode")
    code, body = curl(cluster, user, f"http://{jn}/getJournal?jid={cfg.journal_id}&segmentTxId=1")
    assert code == 403 and "may not use /getJournal" in body, body
    forged = tmp_path / "forged"
    forged.write_bytes(b"not an image" * 100)
    nn = http_of(cluster, "namenode")
    url = f"http://{nn}/imagetransfer?txid=999999&md5=0&storageInfo=x"
    code, body = curl(cluster, user, "-X", "PUT", "--data-binary", f"@{forged}", url)
    assert code == 403 and "may not use /imagetransfer" in body, body
    name_dirs = [Path(nn_cfg.name_dir) for nn_cfg in cfg.namenodes.values()]
    assert not any("999999" in p.name for d in name_dirs for p in d.rglob("*"))


def test_fsck_runs_as_the_authenticated_user_not_the_claimed_one(cluster: dict[str, Any]) -> None:
    nn = http_of(cluster, "namenode")
    code, body = curl(cluster, cluster["kdc"]["user_ccache"], f"http://{nn}/fsck?path=/&ugi=nn")
    assert code == 200
    assert "FAILED" in body and "Superuser privilege is required" in body, body[-500:]
    code, body = curl(cluster, cluster["kdc"]["admin_ccache"], f"http://{nn}/fsck?path=/")
    assert code == 200 and "is HEALTHY" in body, body[-500:]


def test_webhdfs_serves_the_spnego_user_and_refuses_data_ops_without_tokens(
    cluster: dict[str, Any],
) -> None:
    """WebHDFS (design §W): the namespace ops run as the SPNEGO-authenticated user, whatever
    user.name claims; OPEN and CREATE, whose DataNode redirect needs a delegation token
    qjm does not issue over HTTP, are refused by name."""
    user = cluster["kdc"]["user_ccache"]
    base = f"http://{http_of(cluster, 'namenode')}/webhdfs/v1"
    code, body = curl(cluster, None, f"{base}/?op=LISTSTATUS")
    assert code == 401
    code, body = curl(cluster, user, "-X", "PUT", f"{base}/krb-web?op=MKDIRS")
    assert (code, json.loads(body)) == (200, {"boolean": True}), body
    code, body = curl(cluster, user, f"{base}/krb-web?op=GETFILESTATUS")
    assert code == 200 and json.loads(body)["FileStatus"]["owner"] == os_user(), body
    code, body = curl(cluster, user, f"{base}/?op=LISTSTATUS&user.name=nn")
    assert code == 403 and "Usernames not matched" in body, body
    code, body = curl(cluster, user, f"{base}/krb-web?op=OPEN")
    assert code == 400 and "UnsupportedOperationException" in body and "delegation" in body
    code, body = curl(cluster, user, "-X", "PUT", f"{base}/krb-web/f?op=CREATE")
    assert code == 400 and "UnsupportedOperationException" in body
    code, body = curl(cluster, user, "-X", "DELETE", f"{base}/krb-web?op=DELETE")
    assert (code, json.loads(body)) == (200, {"boolean": True}), body


def test_only_the_zkfcs_may_touch_the_ha_znodes(
    cluster: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ZooKeeper's own Kerberos (design §S.11): the HA znodes are the NameNodes' SASL id's
    alone, so a client logged in with the user's ticket is refused them; a client without
    SASL gets no session at all, so it can neither touch them nor fill ZooKeeper."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoAuthError, SessionClosedRequireSaslError
    from kazoo.security import make_acl

    from qjm.cluster.hadoop_conf import core_site

    cfg = load_config(cluster["config"])
    parent = f"{cfg.zookeeper.parent_znode}/{cfg.nameservice}"
    assert cfg.zookeeper.sasl and cfg.zookeeper.acl == "sasl:nn:rwcda"
    assert core_site(cfg)["ha.zookeeper.acl"] == "sasl:nn:rwcda"
    assert "ha.zookeeper.acl" in Path(cluster["hadoop_conf"], "core-site.xml").read_text()
    kdc = cluster["kdc"]
    monkeypatch.setenv("KRB5_CONFIG", kdc["krb5_conf"])
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{kdc['user_ccache']}")
    monkeypatch.delenv("KRB5_CLIENT_KTNAME", raising=False)
    user = KazooClient(
        hosts=cluster["zookeeper"],
        timeout=10,
        sasl_options={"mechanism": "GSSAPI", "service": "zookeeper"},
    )
    user.start(timeout=20)
    attempts = (
        lambda c: c.delete(f"{parent}/ActiveStandbyElectorLock"),
        lambda c: c.create(f"{parent}/ActiveStandbyElectorLock", b"mine"),
        lambda c: c.set(f"{parent}/ActiveBreadCrumb", b"forged"),
        lambda c: c.delete(f"{parent}/ActiveBreadCrumb"),
        lambda c: c.get(f"{parent}/ActiveBreadCrumb"),
    )
    try:
        # the user's SASL login succeeded: a znode only the user's SASL id may read, it reads
        probe = f"/sasl-probe-{os.getpid()}"
        user.create(probe, b"mine", acl=[make_acl("sasl", os_user(), all=True)])
        assert user.get(probe)[0] == b"mine"
        user.delete(probe)
        for attempt in attempts:
            with pytest.raises(NoAuthError):
                attempt(user)
        assert user.exists(f"{parent}/ActiveStandbyElectorLock") is not None
        # a stranger: ZooKeeper closes a session that did not authenticate at its first
        # request, whatever it asks (a junk znode at the root included)
        for attempt in (*attempts, lambda c: c.create("/junk", b"x" * 1000)):
            stranger = KazooClient(hosts=cluster["zookeeper"], timeout=10)
            stranger.start(timeout=20)
            try:
                with pytest.raises(SessionClosedRequireSaslError):
                    attempt(stranger)
            finally:
                stranger.stop()
                stranger.close()
        assert user.exists("/junk") is None
        assert user.exists(f"{parent}/ActiveBreadCrumb") is not None
    finally:
        user.stop()
        user.close()
    assert wait_single_active_secure(cluster, cfg)  # the election goes on


def audit_lines(cfg: Any) -> list[str]:
    """Every line of every NameNode's audit log."""
    return [
        line
        for nn in cfg.namenodes.values()
        if (Path(nn.name_dir) / "hdfs-audit.log").exists()
        for line in (Path(nn.name_dir) / "hdfs-audit.log").read_text().splitlines()
    ]


def test_the_audit_log_names_the_authenticated_principal(cluster: dict[str, Any]) -> None:
    cfg = load_config(cluster["config"])
    lines = audit_lines(cfg)
    user = f"{os_user()}@{cluster['kdc']['realm']}"
    # FsShell's -put creates NAME._COPYING_ and renames it
    created = [line for line in lines if "\tcmd=create\tsrc=/secure/hello.txt._COPYING_\t" in line]
    assert created, lines[-20:]
    assert f"allowed=true\tugi={user} (auth:KERBEROS)\tip=/127.0.0.1\t" in created[0]
    refused = [line for line in lines if line.split("\t")[0].endswith("allowed=false")]
    assert all("(auth:KERBEROS)" in line for line in refused)


def test_a_proxy_user_acts_for_whom_its_rule_names_and_no_one_else(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    """The genuine client with HADOOP_PROXY_USER, as Hadoop's UGI reads it (design §S.14)."""
    from qjm.hdfs.proto import Security_pb2 as sec

    kdc, realm = cluster["kdc"], cluster["kdc"]["realm"]
    user = f"{os_user()}@{realm}"
    r = shell("-mkdir", "-p", "/proxied")
    assert r.returncode == 0, r.stderr
    r = shell("-chmod", "777", "/proxied")
    assert r.returncode == 0, r.stderr
    local = tmp_path / "for-alice.txt"
    local.write_text("written for alice\n")
    r = java(cluster, kdc["user_ccache"], "-put", str(local), "/proxied/a.txt", proxy_user="alice")
    assert r.returncode == 0, r.stderr[-2000:]
    r = shell("-ls", "/proxied")  # as the user itself: the file is alice's
    assert r.returncode == 0 and " alice " in r.stdout and "/proxied/a.txt" in r.stdout, r.stdout
    r = shell("-cat", "/proxied/a.txt")
    assert r.stdout == "written for alice\n", r.stderr
    # mallory is named by no rule: Hadoop's own refusal, and nothing of hers is made
    r = java(cluster, kdc["user_ccache"], "-mkdir", "/proxied/m", proxy_user="mallory")
    assert r.returncode != 0
    assert f"User: {user} is not allowed to impersonate mallory" in r.stderr, r.stderr[-2000:]
    assert shell("-test", "-e", "/proxied/m").returncode != 0
    # the audit log names both: the proxied user and the real one behind it
    cfg = load_config(cluster["config"])
    lines = audit_lines(cfg)
    proxied = [line for line in lines if "src=/proxied/a.txt._COPYING_" in line]
    assert proxied and f"ugi=alice (auth:PROXY) via {user} (auth:KERBEROS)" in proxied[0]
    # a token the proxy asks for is alice's, with the user as its real user
    with logged_in(cfg.security, kdc["user_ccache"]) as login:
        assert login is not None
        as_alice = replace(login, proxy_user="alice")
        got = token_call(
            cluster,
            as_alice,
            "getDelegationToken",
            sec.GetDelegationTokenRequestProto(renewer=os_user()),
            sec.GetDelegationTokenResponseProto,
        )
    assert not isinstance(got, str), got
    ident = parse_identifier(got.token.identifier)
    assert (ident.owner, ident.realuser) == ("alice", user)


HDFS_NATIVE_SCRIPT = """
import sys
from hadoop_clients import native_client
from pathlib import Path
client = native_client(Path(sys.argv[1]))
with client.create("/secure/native.bin") as f:
    f.write(b"written by hdfs-native with a ticket")
with client.read("/secure/native.bin") as f:
    print(f.read().decode())
"""


def hdfs_native(cluster: dict[str, Any], ccache: str) -> subprocess.CompletedProcess[str]:
    """The hdfs-native script run in a process whose Kerberos ticket cache is ccache."""
    env = {
        **os.environ,
        "KRB5CCNAME": f"FILE:{ccache}",
        "KRB5_CONFIG": cluster["kdc"]["krb5_conf"],
        "PYTHONPATH": str(Path(__file__).parent),
    }
    argv = [sys.executable, "-c", HDFS_NATIVE_SCRIPT, cluster["hadoop_conf"]]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)


def test_hdfs_native_with_a_ticket_writes_and_reads_and_without_one_is_refused(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    aes_before = aes_connections(cluster)
    r = hdfs_native(cluster, cluster["kdc"]["user_ccache"])
    assert r.returncode == 0 and r.stdout.strip() == "written by hdfs-native with a ticket", (
        r.stderr[-2000:]
    )
    # hdfs-native offers AES/CTR/NoPadding from hadoop-conf too: its streams switched
    assert aes_connections(cluster) >= aes_before + 2
    r = hdfs_native(cluster, str(tmp_path / "no-ticket"))
    assert r.returncode != 0
    assert "credentials" in r.stderr.lower() or "gss" in r.stderr.lower(), r.stderr[-2000:]


def test_cluster_status_asks_the_daemons_with_the_admin_ticket(cluster: dict[str, Any]) -> None:
    directory = Path(cluster["config"]).parent
    argv = [sys.executable, "-m", "qjm", "cluster", "status", "--dir", str(directory), "--json"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 3), r.stderr  # 3: a daemon is down (the failover test's kill)
    status = json.loads(r.stdout)
    states = sorted(
        d.get("ha_state", "") for d in status["daemons"].values() if d.get("kind") == "namenode"
    )
    assert "active" in states, states
    dns = [d for d in status["daemons"].values() if d.get("kind") == "datanode"]
    assert dns and all(d["namenode_view"] == "live" for d in dns), dns


def test_with_privacy_no_name_crosses_the_wire_in_clear(
    cluster: dict[str, Any], shell: FsShellSession
) -> None:
    from wire_tap import WireTap

    cfg = load_config(cluster["config"])
    assert cfg.security.rpc_protection == "privacy"
    active = wait_single_active_secure(cluster, cfg)
    host, port = cluster[active]["rpc"].rsplit(":", 1)
    name = "/wire-secret-" + "q" * 24
    with WireTap((host, int(port))) as tap:
        uri = f"hdfs://127.0.0.1:{tap.port}{name}"
        r = shell("-mkdir", uri)
        assert r.returncode == 0, r.stderr[-2000:]
        r = shell("-ls", f"hdfs://127.0.0.1:{tap.port}/")
        assert r.returncode == 0 and name in r.stdout, r.stderr[-2000:]
        seen = tap.seen()
    assert len(seen) > 1000  # the calls went through the tap
    assert name.encode() not in seen and b"wire-secret" not in seen


def test_with_privacy_no_block_byte_crosses_the_data_transfer_wire_in_clear(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    """Design §S.12: the genuine FsShell, its sockets sent through a recording SOCKS proxy
    (Hadoop's SocksSocketFactory), writes and reads a file of random bytes; the proxy
    carried its data transfer connections, and none of the file's bytes in clear."""
    from wire_tap import SocksTap

    cfg = load_config(cluster["config"])
    assert cfg.security.data_transfer_protection == "privacy"
    site = (Path(cluster["hadoop_conf"]) / "hdfs-site.xml").read_text()
    assert "<name>dfs.data.transfer.protection</name><value>privacy</value>" in "".join(
        site.split()
    )
    assert "<name>dfs.encrypt.data.transfer.cipher.suites</name><value>AES/CTR/NoPadding" in (
        "".join(site.split())
    )
    xfer_ports = {int(dn.transfer_address.rsplit(":", 1)[1]) for dn in cfg.datanodes.values()}
    aes_before = aes_connections(cluster)
    data = random.Random(12).randbytes(1_000_000)
    (tmp_path / "secret.bin").write_bytes(data)
    with SocksTap() as tap:
        via = (
            "-D",
            "hadoop.rpc.socket.factory.class.default=org.apache.hadoop.net.SocksSocketFactory",
            "-D",
            f"hadoop.socks.server=127.0.0.1:{tap.port}",
            # a client context of its own: the JVM's default one may hold a data transfer
            # connection an earlier command opened around the proxy, and reuse it
            "-D",
            "dfs.client.context=socks-tap",
        )
        r = shell(*via, "-put", "-f", str(tmp_path / "secret.bin"), "/secure/sasl-secret.bin")
        assert r.returncode == 0, r.stderr[-2000:]
        got = shell.run_bytes(*via, "-cat", "/secure/sasl-secret.bin")
        assert got.returncode == 0, got.stderr[-2000:]
        assert got.stdout == data
        seen, destinations = tap.seen(), list(tap.destinations)
    assert {port for _, port in destinations} & xfer_ports, destinations
    assert len(seen) > 2 * len(data), destinations  # the write and the read crossed the proxy
    for at in range(0, len(data) - 16, 7919):
        assert data[at : at + 16] not in seen, at
    # the genuine client offered AES/CTR/NoPadding and the streams switched to it: its
    # keystream and ours agree, or the bytes read back would differ
    assert aes_connections(cluster) >= aes_before + 2


def aes_connections(cluster: dict[str, Any]) -> int:
    """Data transfer connections the DataNodes switched to AES-CTR, from their /metrics."""
    total = 0
    for d in cluster.values():
        if isinstance(d, dict) and d.get("kind") == "datanode":
            port = str(d["http"]).rpartition(":")[2]
            code, body = curl(
                cluster, cluster["kdc"]["user_ccache"], f"http://localhost:{port}/metrics"
            )
            assert code == 200, body[:300]
            line = next(
                x for x in body.splitlines() if x.startswith("qjm_datanode_aes_connections_total ")
            )
            total += int(float(line.split()[1]))
    return total


def test_a_read_block_without_the_sasl_handshake_is_refused(
    cluster: dict[str, Any], shell: FsShellSession, tmp_path: Path
) -> None:
    """Design §S.12: a DataNode with dfs.data.transfer.protection answers a READ_BLOCK sent
    without the magic number (with a genuine token) with nothing and closes; the same read
    after the handshake returns the bytes."""
    from qjm.datanode import transfer_client as tc
    from qjm.hdfs import datatransfer as codec
    from qjm.hdfs.proto import datatransfer_pb2 as dt
    from qjm.security.block_token import Token

    cfg = load_config(cluster["config"])
    payload = random.Random(13).randbytes(5000)
    (tmp_path / "raw.bin").write_bytes(payload)
    r = shell("-put", "-f", str(tmp_path / "raw.bin"), "/secure/raw.bin")
    assert r.returncode == 0, r.stderr[-2000:]
    lb = located(cluster, cfg, "/secure/raw.bin")
    block, node = tc.block_from_proto(lb.b), lb.locs[0]
    t = lb.blockToken
    token = Token(t.identifier, t.password, t.kind, t.service)

    async def raw_read() -> bytes:
        reader, writer = await asyncio.open_connection(node.id.ipAddr, node.id.xferPort)
        try:
            op = dt.OpReadBlockProto(
                header=tc.client_header(block, "raw", token), offset=0, len=len(payload)
            )
            writer.write(codec.encode_op(codec.Op.READ_BLOCK, op))
            await writer.drain()
            return await asyncio.wait_for(reader.read(), 20)
        finally:
            writer.close()

    assert asyncio.run(raw_read()) == b""  # closed without a byte: no answer, no block
    protection = TransferProtection.of(cfg.security.data_transfer_protection)
    got = asyncio.run(
        tc.read_block(
            node, block, 0, len(payload), token=token, timeout_s=20, protection=protection
        )
    )
    assert got == payload


SPARK_JOB = """
import json, os, sys
from qjm.spark.session import build_session, log4j2_config

conf_dir, krb5_conf, token_file, principal = sys.argv[1:5]
java = (
    f"-Dlog4j2.configurationFile={log4j2_config().as_uri()} "
    f"-Djava.security.krb5.conf={krb5_conf} -Dsun.security.krb5.disableReferrals=true"
)
spark = build_session(
    "local[2]",
    "qjm-kerberos",
    conf={
        "spark.driver.extraJavaOptions": java,
        # the hadoop-conf on the classpath: UGI reads Kerberos from its core-site.xml
        "spark.driver.extraClassPath": conf_dir,
        "spark.sql.shuffle.partitions": "2",
        # the renewer Spark names for the tokens it gets (its YARN-side setting)
        "spark.hadoop.yarn.resourcemanager.principal": principal,
    },
)
df = spark.range(50_000).selectExpr("id", "id * 7 AS x")
df.write.mode("overwrite").parquet("hdfs://ns1/secure-spark/rows")
back = spark.read.parquet("hdfs://ns1/secure-spark/rows")
jvm, sc = spark.sparkContext._jvm, spark.sparkContext._jsc.sc()
user = jvm.org.apache.hadoop.security.UserGroupInformation.getCurrentUser()
# Spark's own delegation token manager gets the tokens a cluster job would ship
creds = jvm.org.apache.hadoop.security.Credentials()
manager = jvm.org.apache.spark.deploy.security.HadoopDelegationTokenManager(
    sc.conf(), sc.hadoopConfiguration(), None
)
manager.obtainDelegationTokens(creds)
creds.writeTokenStorageFile(
    jvm.org.apache.hadoop.fs.Path("file://" + token_file), sc.hadoopConfiguration()
)
tokens = [f"{t.getKind()} {t.getService()}" for t in creds.getAllTokens().toArray()]
print(json.dumps({
    "tokens": tokens,
    "count": back.count(),
    "sum": back.selectExpr("sum(x)").first()[0],
    "auth": str(user.getAuthenticationMethod()),
    "user": str(user.getUserName()),
}))
spark.stop()
"""


def test_spark_writes_and_reads_parquet_on_the_kerberos_cluster(
    cluster: dict[str, Any], tmp_path: Path
) -> None:
    """Spark (local mode) with the user's ticket: Parquet to hdfs://ns1 and back, through
    Hadoop's own Kerberos login (without a ticket the same client is refused: the FsShell
    test above); Spark's token manager gets a delegation token, with which the genuine
    client, holding no ticket, lists what Spark wrote."""
    token_file = tmp_path / "spark.tokens"
    kdc = cluster["kdc"]
    env = {
        **os.environ,
        "KRB5CCNAME": f"FILE:{kdc['user_ccache']}",
        "KRB5_CONFIG": kdc["krb5_conf"],
    }
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            SPARK_JOB,
            cluster["hadoop_conf"],
            kdc["krb5_conf"],
            str(token_file),
            kdc["user_principal"],
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["count"] == 50_000 and out["sum"] == 7 * sum(range(50_000)), out
    assert out["auth"] == "KERBEROS" and out["user"] == kdc["user_principal"], out
    assert out["tokens"] == ["HDFS_DELEGATION_TOKEN ha-hdfs:ns1"], out
    r = java(
        cluster, str(tmp_path / "no-ticket"), "-ls", "/secure-spark/rows", token_file=token_file
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "/secure-spark/rows/_SUCCESS" in r.stdout, r.stdout


def test_started_again_the_cluster_is_still_kerberos_and_keeps_its_files(
    cluster: dict[str, Any],
) -> None:
    """Last in the module: stops the cluster and starts it again from its directory."""
    from qjm.cluster.launcher import cluster_down, cluster_up

    directory = Path(cluster["config"]).parent
    cluster_down(directory)
    again = cluster_up(directory, journalnodes=3, namenodes=2, zookeeper=True, datanodes=2)
    assert again["kdc"]["realm"] == cluster["kdc"]["realm"]
    assert load_config(again["config"]).security.kerberos
    user = again["kdc"]["user_ccache"]
    r = java(again, user, "-cat", "/secure-before.txt")
    assert r.returncode == 0 and r.stdout == "written before the failover\n", r.stderr[-2000:]
    r = java(again, str(directory / "no-ticket"), "-ls", "/")
    assert "Client cannot authenticate via:[TOKEN, KERBEROS]" in r.stderr, r.stderr[-2000:]
