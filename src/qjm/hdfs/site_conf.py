"""HDFS's configuration keys for a qjm cluster: what the launcher writes into hadoop-conf
(core-site.xml, hdfs-site.xml), and what each daemon's /conf and `qjm getconf` show
(design §N.11). One mapping, so the three never disagree.
"""

from __future__ import annotations

from qjm.config import HTTP_ONLY, ClusterConfig
from qjm.config_site import SETTINGS, settings_properties, site_properties
from qjm.security.principal import KerberosName

PROXY_PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"

# Client-side retry settings: a refused connection fails at once and the client moves to the
# next NameNode after 100 ms .. 1 s, and keeps trying long enough (20 failovers, ~15 s) to
# ride out an operator's manual failover.
FAST_FAILOVER = {
    "dfs.client.failover.sleep.base.millis": "100",
    "dfs.client.failover.sleep.max.millis": "1000",
    "dfs.client.failover.max.attempts": "20",
    "dfs.client.failover.connection.retries": "0",
    "dfs.client.failover.connection.retries.on.timeouts": "0",
    "dfs.client.retry.policy.enabled": "false",
}
FAST_IPC = {
    "ipc.client.connect.max.retries": "1",
    "ipc.client.connect.retry.interval": "100",
    "ipc.client.connect.max.retries.on.timeouts": "1",
    "ipc.client.connect.timeout": "2000",
    "ipc.client.rpc-timeout.ms": "30000",
}


def core_site(cfg: ClusterConfig) -> dict[str, str]:
    """core-site.xml's properties: the default file system is the nameservice (and, with
    automatic failover, the ZooKeeper quorum, where HDFS keeps ha.zookeeper.quorum)."""
    props = {
        "fs.defaultFS": f"hdfs://{cfg.nameservice}",
        "hadoop.security.authentication": cfg.security.authentication,
        "fs.trash.interval": "0",
        "fs.permissions.umask-mode": f"{cfg.namenode.umask:03o}",
        **FAST_IPC,
    }
    if cfg.namenode.automatic_failover:
        props["ha.zookeeper.quorum"] = cfg.zookeeper.quorum
        if cfg.zookeeper.sasl:  # as HDFS writes it (design §S.11)
            props["ha.zookeeper.acl"] = cfg.zookeeper.acl
    if cfg.security.kerberos:
        props["hadoop.rpc.protection"] = cfg.security.rpc_protection
    for name, proxy in cfg.proxyusers.items():  # design §S.14
        for key in ("users", "groups", "hosts"):
            if getattr(proxy, key):
                props[f"hadoop.proxyuser.{name}.{key}"] = getattr(proxy, key)
    # the rest of the cluster config, so daemons can run from these files (design §A.6)
    return props | {k: v for k, v in site_properties(cfg)[0].items() if k not in props}


def hdfs_site(cfg: ClusterConfig) -> dict[str, str]:
    """hdfs-site.xml's properties: the nameservice, its NameNodes and the failover proxy,
    and every node and setting of cfg (read back by qjm.config_site)."""
    ns = cfg.nameservice
    props = {
        "dfs.nameservices": ns,
        f"dfs.ha.namenodes.{ns}": ",".join(cfg.namenodes),
    }
    for name, nn in cfg.namenodes.items():
        props[f"dfs.namenode.rpc-address.{ns}.{name}"] = nn.rpc_address
        props[f"dfs.namenode.http-address.{ns}.{name}"] = nn.http_address
    props |= {
        f"dfs.client.failover.proxy.provider.{ns}": PROXY_PROVIDER,
        "dfs.ha.automatic-failover.enabled": str(cfg.namenode.automatic_failover).lower(),
        "dfs.namenode.shared.edits.dir": cfg.shared_edits_uri(),
        "dfs.replication": str(cfg.namenode.default_replication),
        "dfs.blocksize": str(cfg.namenode.block_size),
        "dfs.permissions.superusergroup": cfg.namenode.superuser_group,
        **FAST_FAILOVER,
    }
    sec = cfg.security
    if sec.http_policy != HTTP_ONLY:  # HTTPS on the HTTP ports (design §S.13)
        props["dfs.http.policy"] = sec.http_policy
        for name, nn in cfg.namenodes.items():
            props[f"dfs.namenode.https-address.{ns}.{name}"] = nn.https_address
        # per-daemon keys in HDFS; a client config names the first node's
        for key, nodes in (
            ("dfs.journalnode.https-address", list(cfg.journalnodes.values())),
            ("dfs.datanode.https.address", list(cfg.datanodes.values())),
        ):
            if nodes and nodes[0].https_address:
                props[key] = nodes[0].https_address
    props["dfs.block.access.token.enable"] = str(sec.block_tokens).lower()  # design §S.9
    if sec.data_transfer_protection.strip():  # SASL on data transfer (design §S.12)
        props["dfs.data.transfer.protection"] = sec.data_transfer_protection
    if sec.data_transfer_cipher_suites.strip():  # AES-CTR after the handshake (design §S.12)
        props["dfs.encrypt.data.transfer.cipher.suites"] = sec.data_transfer_cipher_suites
        props["dfs.encrypt.data.transfer.cipher.key.bitlength"] = str(
            sec.data_transfer_cipher_key_bits
        )
    if sec.kerberos:  # the principals clients expect of each server (design §S.4)
        for key, pattern in (
            ("dfs.namenode.kerberos.principal", sec.namenode_principal),
            ("dfs.journalnode.kerberos.principal", sec.journalnode_principal),
            ("dfs.datanode.kerberos.principal", sec.datanode_principal),
        ):
            props[key] = str(KerberosName.parse(pattern).in_realm(sec.realm))
    # the rest of the cluster config, so daemons can run from these files (design §A.6)
    return props | {k: v for k, v in site_properties(cfg)[1].items() if k not in props}


def _ms_to_s(ms: int) -> str:
    return f"{ms // 1000}" if ms % 1000 == 0 else f"{ms / 1000:g}"


def server_site(cfg: ClusterConfig) -> dict[str, str]:
    """The servers' cluster-wide settings under their HDFS keys (what an HDFS operator puts
    in every server's hdfs-site.xml), defaults included, in the form qjm.config_site reads
    back (design §A.6); principals only under Kerberos, no empty values."""
    core, hdfs = settings_properties(cfg, with_defaults=True)
    principals = {s.key for s in SETTINGS if s.kind == "principal"}
    props = {
        k: v
        for k, v in (core | hdfs).items()
        if v and not k.startswith("qjm.") and (cfg.security.kerberos or k not in principals)
    }
    props["dfs.ha.tail-edits.period"] = _ms_to_s(cfg.namenode.tail_wait_ms)
    props["hadoop.security.authorization"] = str(cfg.security.kerberos).lower()
    return props


def daemon_site(cfg: ClusterConfig, role: str, name: str) -> dict[str, str]:
    """One daemon's own keys (its addresses and directories, its keytab path) by role
    ("namenode", "journalnode", "datanode") and name; KeyError for an unknown one."""
    sec = cfg.security
    if role == "namenode":
        n = cfg.namenodes[name]
        props = {
            "dfs.ha.namenode.id": name,
            "dfs.namenode.name.dir": n.name_dir,
            "dfs.namenode.rpc-address": n.rpc_address,
            "dfs.namenode.http-address": n.http_address,
        }
        keytab = sec.namenode_keytab
        keytab_key = "dfs.namenode.keytab.file"
    elif role == "journalnode":
        j = cfg.journalnodes[name]
        props = {
            "dfs.journalnode.edits.dir": j.edits_dir,
            "dfs.journalnode.rpc-address": j.rpc_address,
            "dfs.journalnode.http-address": j.http_address,
        }
        keytab = sec.journalnode_keytab
        keytab_key = "dfs.journalnode.keytab.file"
    elif role == "datanode":
        d = cfg.datanodes[name]
        props = {
            "dfs.datanode.data.dir": ",".join(d.dirs()),
            "dfs.datanode.address": d.transfer_address,
            "dfs.datanode.ipc.address": d.ipc_address,
            "dfs.datanode.http.address": d.http_address,
        }
        keytab = sec.datanode_keytab
        keytab_key = "dfs.datanode.keytab.file"
    else:
        raise KeyError(role)
    if sec.kerberos and keytab:  # a keytab's path, never its keys
        props[keytab_key] = keytab
    return props


# Keys whose values are secrets, as Hadoop's hadoop.security.sensitive-config-keys: shown
# as <redacted> wherever a configuration is shown.
SENSITIVE_SUFFIXES = ("password", "secret", "ha.zookeeper.auth", "secret.key")
REDACTED = "<redacted>"


def redact(key: str, value: str) -> str:
    """value, or <redacted> when key names a secret."""
    return REDACTED if key.lower().endswith(SENSITIVE_SUFFIXES) else value


def conf_properties(
    cfg: ClusterConfig, role: str | None = None, name: str | None = None
) -> list[tuple[str, str, str]]:
    """(key, value, resource) of every property a daemon (or, with no role, `getconf`) sees:
    core-site.xml's, hdfs-site.xml's, the servers' and the daemon's own; a later file wins
    a key, as Hadoop's Configuration; secrets redacted."""
    server_resource = cfg.source if cfg.source != "<defaults>" else "programmatically"
    out: dict[str, tuple[str, str]] = {}
    # without a daemon: each NameNode's own keys suffixed by nameservice and id, as HDFS's
    # HA configuration writes them (dfs.namenode.name.dir.ns1.nn1)
    per_namenode = {
        f"dfs.namenode.name.dir.{cfg.nameservice}.{n}": nn.name_dir
        for n, nn in cfg.namenodes.items()
    }
    for resource, props, overrides in (
        ("core-site.xml", core_site(cfg), True),
        ("hdfs-site.xml", hdfs_site(cfg), True),
        # the servers' settings hadoop-conf does not already carry (it carries every setting
        # off its default, design §A.6, in the form the daemons read back)
        (server_resource, server_site(cfg), False),
        (server_resource, daemon_site(cfg, role, name or "") if role else per_namenode, True),
    ):
        for key, value in props.items():
            if overrides or key not in out:
                out[key] = (value, resource)
    return [(k, redact(k, v), r) for k, (v, r) in sorted(out.items())]
