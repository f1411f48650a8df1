"""Proxy users (design §S.14): the rules as a table, the config that holds them, and a
simple-auth server holding a claimed real user to them."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf.wrappers_pb2 import StringValue

from qjm.cluster.hadoop_conf import core_site
from qjm.cluster.launcher import proxyusers_of_stopped
from qjm.config import config_from_dict, dump_config, load_config
from qjm.errors import ConfigError
from qjm.ipc import CallContext, IpcClient, IpcServer, Method, RpcConnectionError
from qjm.ipc.sasl import ProxyPolicy
from qjm.namenode.audit import audit_line
from qjm.security.proxy_users import MachineList, ProxyRule, ProxyRuleError, authorize

ALICE = "alice@R"
RULES = {
    "alice": ProxyRule.parse("bob, carol", "analysts", "127.0.0.1,10.1.0.0/16", resolve=False),
    "svc": ProxyRule.parse("*", "", "*", resolve=False),
    "grp": ProxyRule.parse("", "*", "::1", resolve=False),
    "nohosts": ProxyRule.parse("bob", "", "", resolve=False),
}
DENIED = "User: {real} is not allowed to impersonate {user}"
ELSEWHERE = "Unauthorized connection for super-user: {real} from IP {ip}"


@pytest.mark.parametrize(
    ("real", "user", "groups", "ip", "refusal"),
    [
        ("alice", "bob", (), "127.0.0.1", None),
        ("alice", "carol", (), "10.1.200.3", None),  # inside the network
        ("alice", "dave", ("staff", "analysts"), "127.0.0.1", None),  # by a group
        ("alice", "dave", ("staff",), "127.0.0.1", DENIED),
        ("alice", "bob", (), "10.2.0.1", ELSEWHERE),  # outside the network
        ("alice", "bob", (), "::ffff:127.0.0.1", None),  # an IPv4-mapped address
        ("alice", "bob", (), "not-an-ip", ELSEWHERE),
        ("svc", "anyone", (), "192.0.2.7", None),
        ("grp", "anyone", ("g",), "::1", None),
        ("grp", "anyone", (), "::1", None),  # groups = * admits a user of no group
        ("nohosts", "bob", (), "127.0.0.1", ELSEWHERE),  # no hosts: from nowhere
        ("mallory", "bob", (), "127.0.0.1", DENIED),  # no rule at all
    ],
)
def test_who_may_act_for_whom_and_from_where(
    real: str, user: str, groups: tuple[str, ...], ip: str, refusal: str | None
) -> None:
    real_name = f"{real}@R"
    got = authorize(RULES, real_name, real, user, groups, ip)
    want = None if refusal is None else refusal.format(real=real_name, user=user, ip=ip)
    assert got == want


def test_machine_lists_read_addresses_networks_names_and_refuse_a_bad_network() -> None:
    assert MachineList.parse("*").includes("203.0.113.9")
    local = MachineList.parse("localhost")  # a name resolves to its addresses
    assert local.includes("127.0.0.1")
    assert not local.includes("192.0.2.1")
    assert not MachineList.parse("no-such-host.invalid").includes("127.0.0.1")
    with pytest.raises(ProxyRuleError, match="'10.0.0.0/99'"):
        MachineList.parse("10.0.0.0/99")


def test_the_config_holds_proxy_users_as_hdfs_names_them(tmp_path: Path) -> None:
    cfg = config_from_dict(
        {"proxyusers": {"spark": {"hosts": "127.0.0.1", "groups": "analysts", "users": "bob"}}}
    )
    spark = cfg.proxyusers["spark"]
    assert (spark.users, spark.groups, spark.hosts) == ("bob", "analysts", "127.0.0.1")
    path = tmp_path / "c.toml"
    path.write_text(dump_config(cfg))
    assert load_config(path).proxyusers == cfg.proxyusers
    site = core_site(cfg)
    assert site["hadoop.proxyuser.spark.hosts"] == "127.0.0.1"
    assert site["hadoop.proxyuser.spark.groups"] == "analysts"
    assert site["hadoop.proxyuser.spark.users"] == "bob"
    with pytest.raises(ConfigError, match=r"unknown key proxyusers\.spark\.host "):
        config_from_dict({"proxyusers": {"spark": {"host": "*"}}})
    with pytest.raises(ConfigError, match=r"proxyusers\.spark\.hosts: '10\.0\.0\.0/40'"):
        config_from_dict({"proxyusers": {"spark": {"hosts": "10.0.0.0/40"}}})
    with pytest.raises(ConfigError, match=r"proxyusers\.spark\.users: expected str"):
        config_from_dict({"proxyusers": {"spark": {"users": ["bob"]}}})


def test_an_audit_line_names_the_real_user_of_a_proxy_call() -> None:
    line = audit_line(
        allowed=True,
        user="bob",
        auth="KERBEROS",
        ip="127.0.0.1",
        cmd="mkdirs",
        src="/b",
        dst=None,
        status=None,
        real_user=ALICE,
    )
    assert "\tugi=bob (auth:PROXY) via alice@R (auth:KERBEROS)\t" in line


PROTOCOL = "org.apache.hadoop.hdfs.protocol.ClientProtocol"


async def whoami(_request: StringValue, ctx: CallContext) -> StringValue:
    """The caller's user and, for a proxy, its real user."""
    return StringValue(value=f"{ctx.user} via {ctx.real_user}" if ctx.real_user else ctx.user)


async def test_a_simple_server_holds_a_claimed_real_user_to_the_rules() -> None:
    server = IpcServer(name="proxy-test")
    server.proxies = ProxyPolicy(
        {"alice": ProxyRule.parse("bob", "", "127.0.0.1")}, lambda _user: ()
    )
    server.register(PROTOCOL, {"whoami": Method(StringValue, whoami)})
    await server.start("127.0.0.1", 0)

    async def call(user: str, real_user: str) -> str:
        client = IpcClient(f"127.0.0.1:{server.port}", PROTOCOL, user=user, real_user=real_user)
        try:
            return (await client.call("whoami", StringValue(), StringValue, timeout=10)).value
        except RpcConnectionError as e:
            return f"refused: {e}"
        finally:
            await client.close()

    try:
        assert await call("bob", "alice") == "bob via alice"
        refused = await call("carol", "alice")
        assert "AuthorizationException" in refused
        assert "User: alice is not allowed to impersonate carol" in refused
        assert "not allowed to impersonate bob" in await call("bob", "mallory")
        assert await call("carol", "") == "carol"  # no real user claimed: simple as ever
        assert await call("alice", "alice") == "alice"  # a real user the same as itself
    finally:
        await server.stop()


def test_a_cluster_started_again_keeps_the_proxy_users_its_toml_names(tmp_path: Path) -> None:
    assert proxyusers_of_stopped(tmp_path) == {}  # nothing made here yet
    cfg = config_from_dict({"proxyusers": {"spark": {"users": "*", "hosts": "127.0.0.1"}}})
    (tmp_path / "cluster.toml").write_text(dump_config(cfg))
    assert proxyusers_of_stopped(tmp_path) == cfg.proxyusers
