"""The cluster config: one TOML file, validated at start with errors that name the key.

```toml
[cluster]
nameservice = "ns1"
journal_id = "ns1"            # defaults to the nameservice

[journalnode]                 # settings shared by every JournalNode
sync_enabled = true
sync_interval_ms = 120000

[journalnodes.jn1]
rpc_address = "127.0.0.1:8485"
http_address = "127.0.0.1:8480"
edits_dir = "/var/lib/qjm/jn1"

[qjournal]                    # the writer's and readers' settings
write_txns_timeout_ms = 20000

[namenode]                    # settings shared by every NameNode
checkpoint_txns = 1000000

[namenodes.nn1]
rpc_address = "127.0.0.1:8020"
http_address = "127.0.0.1:9870"
name_dir = "/var/lib/qjm/nn1"
```
"""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from qjm.errors import ConfigError

JN_RPC_PORT = 8485
JN_HTTP_PORT = 8480
NN_RPC_PORT = 8020
NN_HTTP_PORT = 9870
# Below this the syncer would spin: each round asks a peer for every journal's status.
MIN_SYNC_INTERVAL_MS = 100
MAX_DIR_ITEMS_CEILING = 6_400_000  # HDFS's FSDirectory.MAX_DIR_ITEMS
CEDE_SESSIONS = 3  # by default a ZKFC cedes at most this many ZooKeeper session timeouts
IPC_MAX_DATA_LENGTH = 134_217_728  # ipc.maximum.data.length (the NameNode's and ZKFC's frames)
# The shortest active lease (design §N.1): below it a renewal's round trip would not fit.
MIN_ACTIVE_LEASE_MS = 100
# The shortest time between two rolls that take back a JournalNode (design §N.2).
MIN_READMIT_ROLL_INTERVAL_MS = 100


def parse_address(value: str, key: str, default_port: int | None = None) -> tuple[str, int]:
    """Split "host:port" (or "[v6]:port"), naming the key on error."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        if default_port is None:
            raise ConfigError(f"{key}: {value!r} is not host:port")
        host, port_text = value, str(default_port)
    host = host.strip("[]")
    if not host:
        raise ConfigError(f"{key}: {value!r} has no host")
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigError(f"{key}: port {port_text!r} in {value!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"{key}: port {port} in {value!r} is out of range 0-65535")
    return host, port


def seconds(ms: int) -> float:
    """A duration in milliseconds, as the settings give them, in seconds."""
    return ms / 1000.0


def format_address(host: str, port: int) -> str:
    """Join host and port, bracketing IPv6 hosts."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class JournalNodeSettings:
    """Settings shared by every JournalNode ([journalnode])."""

    sync_enabled: bool = True
    sync_interval_ms: int = 120_000
    edit_cache_size_bytes: int = 1_048_576
    # Resource limits; HDFS has no journal count limit, the others follow its settings.
    max_journals: int = 100  # journals one node holds (formats and peers' clones refused beyond)
    ipc_maximum_data_length: int = 134_217_728  # largest RPC frame (HDFS ipc.maximum.data.length)
    max_inflight_request_bytes: int = 268_435_456  # RPC payload bytes queued at once, all journals
    # Idle and half-sent HTTP connections close after this (hadoop.http.idle_timeout.ms).
    http_idle_timeout_ms: int = 60_000
    http_max_connections: int = 256  # concurrent HTTP connections; more get 503
    # RPC connections and memory (design §N.6)
    ipc_max_connections: int = 1024  # ipc.server.max.connections
    ipc_idle_timeout_ms: int = 20_000  # 2 x ipc.client.connection.maxidletime, as HDFS's server
    ipc_max_unfinished_bytes: int = 268_435_456  # bytes of RPC frames not yet whole, all callers

    def __post_init__(self) -> None:
        """Refuse settings that would make the node misbehave, naming the key."""
        check_sync_interval(self.sync_interval_ms, "journalnode.sync_interval_ms")


def check_sync_interval(value: int, key: str) -> int:
    """The sync interval in ms, or a ConfigError naming key when it is below the minimum."""
    if value < MIN_SYNC_INTERVAL_MS:
        raise ConfigError(
            f"{key} is {value} ms; it must be at least {MIN_SYNC_INTERVAL_MS} ms "
            "(HDFS's default is 120000)"
        )
    return value


@dataclass(frozen=True)
class JournalNodeConfig:
    """One JournalNode ([journalnodes.<name>])."""

    name: str
    rpc_address: str
    http_address: str
    edits_dir: str
    https_address: str = ""  # dfs.journalnode.https-address; "" none (design §S.13)


@dataclass(frozen=True)
class QJournalSettings:
    """The quorum journal client's settings ([qjournal]), with HDFS's defaults."""

    queued_edits_limit_mb: int = 10
    start_segment_timeout_ms: int = 20_000
    prepare_recovery_timeout_ms: int = 120_000
    accept_recovery_timeout_ms: int = 120_000
    finalize_segment_timeout_ms: int = 120_000
    select_input_streams_timeout_ms: int = 20_000
    get_journal_state_timeout_ms: int = 120_000
    new_epoch_timeout_ms: int = 120_000
    write_txns_timeout_ms: int = 20_000
    http_timeout_ms: int = 60_000


@dataclass(frozen=True)
class NameNodeSettings:
    """Settings shared by every NameNode ([namenode]), with HDFS's defaults where it has one."""

    checkpoint_txns: int = 1_000_000  # dfs.namenode.checkpoint.txns
    checkpoint_period_s: int = 3600  # dfs.namenode.checkpoint.period
    checkpoint_check_period_s: int = 60  # dfs.namenode.checkpoint.check.period
    images_retained: int = 2  # dfs.namenode.num.checkpoints.retained
    roll_txns: int = 500_000  # a segment is rolled after this many txns ...
    roll_bytes: int = 67_108_864  # ... or this many bytes ...
    roll_period_s: int = 120  # ... or this age (dfs.ha.log-roll.period)
    tail_wait_ms: int = 1000  # a standby's long-poll for new committed edits
    observer_read_wait_ms: int = 5000  # an observer read waits this long for its state id
    permissions_enabled: bool = True  # dfs.permissions.enabled
    superuser_group: str = "supergroup"  # dfs.permissions.superusergroup
    audit_log: bool = True  # <name_dir>/hdfs-audit.log, a line per namespace call (§S.7)
    default_replication: int = 3  # dfs.replication
    block_size: int = 134_217_728  # dfs.blocksize
    listing_limit: int = 1000  # dfs.ls.limit
    umask: int = 0o022  # fs.permissions.umask-mode, applied by clients; kept for qjm dfs
    # dfs.ha.automatic-failover.enabled: ZKFCs drive the HA state, a user's transition is
    # refused unless forced (haadmin --forcemanual), and a ZKFC's is refused when off
    automatic_failover: bool = False
    # the retry cache (design §N.3): dfs.namenode.enable.retrycache and
    # dfs.namenode.retrycache.expirytime.millis; HDFS bounds it by a share of the heap
    # (dfs.namenode.retrycache.heap.percent), qjm by a number of entries (~300 bytes each)
    retry_cache_enabled: bool = True
    retry_cache_expiry_ms: int = 600_000
    retry_cache_max_entries: int = 250_000
    # Request limits (design §N.4): bytes of a new name (0: none) and entries of a directory
    max_component_length: int = 255  # dfs.namenode.fs-limits.max-component-length
    max_directory_items: int = 1_048_576  # dfs.namenode.fs-limits.max-directory-items
    # Connections and memory (design §N.6)
    ipc_max_connections: int = 8192  # ipc.server.max.connections
    ipc_idle_timeout_ms: int = 20_000  # 2 x ipc.client.connection.maxidletime, as HDFS's server
    ipc_max_unfinished_bytes: int = 268_435_456  # bytes of RPC frames not yet whole, all clients
    image_upload_max_bytes: int = 17_179_869_184  # largest PUT /imagetransfer body kept
    # How long an active answers clients after the last call a quorum accepted at its epoch
    # was sent (design §N.1); below zookeeper.session_timeout_ms. 0: half of that timeout.
    active_lease_ms: int = 0
    # The least time between two rolls made to take back a JournalNode that answers again
    # but missed part of the open segment (design §N.2).
    readmit_roll_interval_ms: int = 10_000
    # Leases of files open for writing (design §B.16): after the soft limit without a
    # renewLease another client's create, append or truncate recovers the file; after the
    # hard limit the active recovers it on its own (HDFS's LeaseManager limits), checked
    # every lease_recheck_ms (dfs.namenode.lease-recheck-interval-ms).
    lease_soft_limit_ms: int = 60_000
    lease_hard_limit_ms: int = 1_200_000  # dfs.namenode.lease-hard-limit-sec (Hadoop 3: 20 min)
    lease_recheck_ms: int = 2_000
    # DataNodes to decommission (design §B.20): a file of host:port transfer addresses (or
    # hosts), one per line, read at start and on refreshNodes (dfs.hosts.exclude); "": none
    hosts_exclude: str = ""
    # How often dead DataNodes, start-up safe mode and re-replication are checked
    # (dfs.namenode.redundancy.interval.seconds)
    redundancy_interval_ms: int = 3000

    def __post_init__(self) -> None:
        """Refuse values that would make the NameNode misbehave, naming the key."""
        if self.active_lease_ms and self.active_lease_ms < MIN_ACTIVE_LEASE_MS:
            raise ConfigError(
                f"namenode.active_lease_ms must be 0 (half the ZooKeeper session timeout) or "
                f"at least {MIN_ACTIVE_LEASE_MS}, got {self.active_lease_ms}"
            )
        if self.readmit_roll_interval_ms < MIN_READMIT_ROLL_INTERVAL_MS:
            raise ConfigError(
                f"namenode.readmit_roll_interval_ms must be at least "
                f"{MIN_READMIT_ROLL_INTERVAL_MS}, got {self.readmit_roll_interval_ms}"
            )
        for key in (
            "checkpoint_txns",
            "roll_txns",
            "roll_bytes",
            "listing_limit",
            "retry_cache_expiry_ms",
            "retry_cache_max_entries",
            "ipc_max_connections",
            "ipc_idle_timeout_ms",
            "image_upload_max_bytes",
            "lease_soft_limit_ms",
            "lease_hard_limit_ms",
            "lease_recheck_ms",
            "redundancy_interval_ms",
        ):
            if getattr(self, key) < 1:
                raise ConfigError(f"namenode.{key} must be at least 1, got {getattr(self, key)}")
        if not 1 <= self.max_directory_items <= MAX_DIR_ITEMS_CEILING:
            raise ConfigError(
                f"namenode.max_directory_items must be 1-{MAX_DIR_ITEMS_CEILING} (HDFS's "
                f"range), got {self.max_directory_items}"
            )
        if self.ipc_max_unfinished_bytes < IPC_MAX_DATA_LENGTH:
            raise ConfigError(
                f"namenode.ipc_max_unfinished_bytes ({self.ipc_max_unfinished_bytes}) is below "
                f"the largest RPC frame, {IPC_MAX_DATA_LENGTH} bytes (ipc.maximum.data.length): "
                "such a request could never arrive"
            )
        if self.default_replication < 1 or self.default_replication > 32767:
            raise ConfigError(
                f"namenode.default_replication must be 1-32767, got {self.default_replication}"
            )
        if self.images_retained < 1:
            raise ConfigError(
                f"namenode.images_retained must be at least 1, got {self.images_retained}"
            )


@dataclass(frozen=True)
class DataNodeSettings:
    """Settings shared by every DataNode ([datanode]), with HDFS's defaults (design §B)."""

    heartbeat_interval_ms: int = 3000  # dfs.heartbeat.interval
    # A DataNode is dead after 2 x this + 10 x the heartbeat interval without a heartbeat
    # (dfs.namenode.heartbeat.recheck-interval; 630 s with the defaults).
    heartbeat_recheck_ms: int = 300_000
    block_report_interval_ms: int = 21_600_000  # dfs.blockreport.intervalMsec
    incremental_report_delay_ms: int = 0  # dfs.blockreport.incremental.intervalMsec
    bytes_per_checksum: int = 512  # dfs.bytes-per-checksum
    max_transfer_threads: int = 4096  # dfs.datanode.max.transfer.threads (connections)
    socket_timeout_ms: int = 60_000  # dfs.client.socket-timeout, the server side's read wait
    max_packet_bytes: int = 16_777_216  # a packet's largest payload accepted from the wire
    du_reserved_bytes: int = 0  # dfs.datanode.du.reserved, per volume
    min_replication: int = 1  # dfs.namenode.replication.min
    safemode_threshold_pct: int = 999  # dfs.namenode.safemode.threshold-pct, in thousandths
    safemode_extension_ms: int = 30_000  # dfs.namenode.safemode.extension
    ipc_max_connections: int = 1024  # its ClientDatanodeProtocol server
    # the block scanner (design §B.18): bytes a second per volume, 0 turns it off
    # (dfs.block.scanner.volume.bytes.per.second), and how often each replica is read back
    # (dfs.datanode.scan.period.hours: 3 weeks)
    scan_bytes_per_second: int = 1_048_576
    scan_period_ms: int = 504 * 3_600_000
    # copies one DataNode is the source of at once (design §B.5): most blocks, and blocks
    # at their last replica (dfs.namenode.replication.max-streams, ...-hard-limit)
    replication_max_streams: int = 2
    replication_streams_hard_limit: int = 4
    # data volumes that may fail before the DataNode stops (design §B.19)
    failed_volumes_tolerated: int = 0  # dfs.datanode.failed.volumes.tolerated

    def __post_init__(self) -> None:
        """Refuse values a DataNode or the block manager cannot use, naming the key."""
        for f in fields(self):
            if f.name in (
                "incremental_report_delay_ms",
                "du_reserved_bytes",
                "failed_volumes_tolerated",
            ):
                continue
            if f.name == "scan_bytes_per_second" and self.scan_bytes_per_second == 0:
                continue
            if f.name == "safemode_extension_ms":
                continue
            if getattr(self, f.name) < 1:
                raise ConfigError(
                    f"datanode.{f.name} must be at least 1, got {getattr(self, f.name)}"
                )
        if self.replication_streams_hard_limit < self.replication_max_streams:
            raise ConfigError(
                f"datanode.replication_streams_hard_limit ({self.replication_streams_hard_limit})"
                f" is below datanode.replication_max_streams ({self.replication_max_streams})"
            )
        if self.failed_volumes_tolerated < 0:
            raise ConfigError(
                "datanode.failed_volumes_tolerated must be 0 or more, got "
                f"{self.failed_volumes_tolerated}"
            )
        if self.safemode_threshold_pct > 1000:
            raise ConfigError(
                f"datanode.safemode_threshold_pct is in thousandths (999 is 0.999), got "
                f"{self.safemode_threshold_pct}"
            )
        if self.bytes_per_checksum > self.max_packet_bytes:
            raise ConfigError(
                f"datanode.bytes_per_checksum ({self.bytes_per_checksum}) exceeds "
                f"datanode.max_packet_bytes ({self.max_packet_bytes})"
            )

    def dead_after_ms(self) -> int:
        """How long without a heartbeat before a NameNode counts a DataNode dead."""
        return 2 * self.heartbeat_recheck_ms + 10 * self.heartbeat_interval_ms


@dataclass(frozen=True)
class DataNodeConfig:
    """One DataNode ([datanodes.<name>]); data_dirs is a comma-separated list of absolute dirs."""

    name: str
    transfer_address: str  # DataTransferProtocol (dfs.datanode.address, 9866)
    ipc_address: str  # ClientDatanodeProtocol (dfs.datanode.ipc.address, 9867)
    http_address: str  # status and metrics (dfs.datanode.http.address, 9864)
    data_dirs: str  # dfs.datanode.data.dir
    https_address: str = ""  # dfs.datanode.https.address; "" none (design §S.13)

    def dirs(self) -> list[str]:
        """The data directories, in order."""
        return [d.strip() for d in self.data_dirs.split(",") if d.strip()]


@dataclass(frozen=True)
class ZooKeeperSettings:
    """ZooKeeper for automatic failover ([zookeeper]), as HDFS's ha.zookeeper.* keys."""

    quorum: str = ""  # ha.zookeeper.quorum: host:port,host:port (required by the ZKFC)
    session_timeout_ms: int = 10_000  # ha.zookeeper.session-timeout.ms
    parent_znode: str = "/qjm-ha"  # ha.zookeeper.parent-znode
    acl: str = "world:anyone:rwcda"  # ha.zookeeper.acl
    auth: str = ""  # ha.zookeeper.auth: scheme:auth[,...]
    # ZooKeeper's own Kerberos (design §S.11): the ZKFC logs in to ZooKeeper with SASL/GSSAPI
    # as its NameNode's principal, from its keytab (HDFS: a JAAS `Client` section and
    # zookeeper.sasl.client); needs [security] authentication = "kerberos"
    sasl: bool = False
    sasl_service: str = "zookeeper"  # zookeeper.sasl.client.username: the server's service

    def __post_init__(self) -> None:
        """Refuse values ZooKeeper would not take, naming the key."""
        if self.session_timeout_ms < 1:
            raise ConfigError(
                f"zookeeper.session_timeout_ms must be at least 1, got {self.session_timeout_ms}"
            )
        if not self.parent_znode.startswith("/") or self.parent_znode.rstrip("/") == "":
            raise ConfigError(
                f"zookeeper.parent_znode: {self.parent_znode!r} is not an absolute znode "
                "path below the root (such as /qjm-ha)"
            )
        for part in (a.strip() for a in self.quorum.split(",") if a.strip()):
            parse_address(part, "zookeeper.quorum")


@dataclass(frozen=True)
class FailoverControllerSettings:
    """The failover controllers' settings ([zkfc]), with HDFS's defaults."""

    port: int = 8019  # dfs.ha.zkfc.port (on each NameNode's RPC host)
    fencing_methods: str = ""  # dfs.ha.fencing.methods: shell(cmd) / sshfence, one per line
    shell_fence_timeout_ms: int = 60_000  # a shell(cmd) method is killed after this
    ssh_private_key_files: str = ""  # dfs.ha.fencing.ssh.private-key-files (comma-separated)
    ssh_connect_timeout_ms: int = 30_000  # dfs.ha.fencing.ssh.connect-timeout
    graceful_fence_timeout_ms: int = 5000  # ha.failover-controller.graceful-fence.rpc-timeout.ms
    new_active_timeout_ms: int = 60_000  # ha.failover-controller.new-active.rpc-timeout.ms
    health_check_interval_ms: int = 1000  # ha.health-monitor.check-interval.ms
    health_rpc_timeout_ms: int = 45_000  # ha.health-monitor.rpc-timeout.ms
    # The longest cedeActive honoured (design §N.7); 0: CEDE_SESSIONS ZooKeeper session
    # timeouts, and never less than what a graceful failover asks for.
    max_cede_ms: int = 0
    # Connections and memory of the ZKFC's IPC server (design §N.6)
    ipc_max_connections: int = 64  # ipc.server.max.connections
    ipc_idle_timeout_ms: int = 20_000  # 2 x ipc.client.connection.maxidletime
    ipc_max_unfinished_bytes: int = 16_777_216  # also its largest frame: its calls are tiny

    def __post_init__(self) -> None:
        """Refuse values the ZKFC cannot use, naming the key."""
        if self.port > 65535:
            raise ConfigError(f"zkfc.port: {self.port} is out of range 0-65535")
        for f in fields(self):
            if f.name.endswith("_ms") and f.name != "max_cede_ms" and getattr(self, f.name) < 1:
                raise ConfigError(f"zkfc.{f.name} must be at least 1, got {getattr(self, f.name)}")
        for key in ("ipc_max_connections", "ipc_max_unfinished_bytes"):
            if getattr(self, key) < 1:
                raise ConfigError(f"zkfc.{key} must be at least 1, got {getattr(self, key)}")
        graceful = self.graceful_cede_ms()
        if self.max_cede_ms and self.max_cede_ms < graceful:
            raise ConfigError(
                f"zkfc.max_cede_ms ({self.max_cede_ms}) is below the {graceful} ms a graceful "
                "failover asks the active's ZKFC to cede (2 x zkfc.graceful_fence_timeout_ms): "
                "every failover would be refused"
            )

    def graceful_cede_ms(self) -> int:
        """What a graceful failover asks the old active's ZKFC to cede: 2 x graceful-fence."""
        return 2 * self.graceful_fence_timeout_ms

    def cede_bound_ms(self, session_timeout_ms: int) -> int:
        """The longest cedeActive this ZKFC honours (design §N.7)."""
        if self.max_cede_ms:
            return self.max_cede_ms
        return max(CEDE_SESSIONS * session_timeout_ms, self.graceful_cede_ms())


AUTHENTICATIONS = ("simple", "kerberos")
RPC_PROTECTIONS = ("authentication", "integrity", "privacy")
# dfs.http.policy (design §S.13): which of a daemon's HTTP ports it serves
HTTP_ONLY, HTTPS_ONLY, HTTP_AND_HTTPS = "HTTP_ONLY", "HTTPS_ONLY", "HTTP_AND_HTTPS"
HTTP_POLICIES = (HTTP_ONLY, HTTPS_ONLY, HTTP_AND_HTTPS)


@dataclass(frozen=True)
class SecuritySettings:
    """[security]: how daemons and clients prove who they are (design §S), as HDFS's
    hadoop.security.authentication and dfs.*.kerberos.principal / keytab.file keys."""

    authentication: str = "simple"  # hadoop.security.authentication: simple or kerberos
    realm: str = ""  # the realm principals without one belong to
    krb5_conf: str = ""  # the krb5.conf every daemon reads (KRB5_CONFIG); "" the system's
    namenode_principal: str = "nn/_HOST"  # dfs.namenode.kerberos.principal (ZKFCs use it too)
    namenode_keytab: str = ""  # dfs.namenode.keytab.file
    journalnode_principal: str = "jn/_HOST"  # dfs.journalnode.kerberos.principal
    journalnode_keytab: str = ""  # dfs.journalnode.keytab.file
    datanode_principal: str = "dn/_HOST"  # dfs.datanode.kerberos.principal
    datanode_keytab: str = ""  # dfs.datanode.keytab.file
    # dfs.web.authentication.kerberos.principal: SPNEGO on every daemon's HTTP port, its key
    # in the daemon's own keytab
    http_principal: str = "HTTP/_HOST"
    # hadoop.rpc.protection: authentication, integrity (each frame signed) or privacy (each
    # frame encrypted), or a comma-separated list a server offers (design §S.8)
    rpc_protection: str = "authentication"
    # dfs.data.transfer.protection: SASL on the DataNodes' data transfer port with the same
    # values; "" (unset) is none, block bytes in clear (design §S.12). Needs Kerberos and
    # block tokens (the handshake's password is the block token's).
    data_transfer_protection: str = ""
    # dfs.encrypt.data.transfer.cipher.suites: "AES/CTR/NoPadding" switches a privacy
    # connection from the SASL layer's 3des to AES-CTR where the peer offers it too, with
    # keys of dfs.encrypt.data.transfer.cipher.key.bitlength bits (design §S.12)
    data_transfer_cipher_suites: str = ""
    data_transfer_cipher_key_bits: int = 128
    # dfs.block.access.token.enable (design §S.9); unset: on under kerberos, off under simple
    block_access_token: bool | None = None
    block_key_update_interval_min: int = 600  # dfs.block.access.key.update.interval
    block_token_lifetime_min: int = 600  # dfs.block.access.token.lifetime
    # Delegation tokens (design §S.10), HDFS's defaults: dfs.namenode.delegation.token.
    # max-lifetime (7 days), .token.renew-interval (1 day), .key.update-interval (1 day)
    delegation_token_max_lifetime_ms: int = 7 * 86_400_000
    delegation_token_renew_interval_ms: int = 86_400_000
    delegation_key_update_interval_ms: int = 86_400_000
    # HTTPS (design §S.13): dfs.http.policy (HTTP_ONLY, HTTPS_ONLY or HTTP_AND_HTTPS); the
    # PEM certificate chain and private key every daemon's HTTPS port presents (HDFS: the
    # keystore of ssl-server.xml); the PEM CA our HTTP clients trust (HDFS: ssl-client.xml's
    # truststore), "" for the system's
    http_policy: str = HTTP_ONLY
    ssl_certificate: str = ""
    ssl_private_key: str = ""
    ssl_ca: str = ""
    # dfs.cluster.administrators: who may read /logs/ under Kerberos (and /jmx and /conf with
    # instrumentation_requires_admin), as Hadoop's ACL "user1,user2 group1,group2"; "*" is
    # everyone, "" no one (design §N.11)
    cluster_administrators: str = ""
    # hadoop.security.instrumentation.requires.admin: /jmx and /conf for administrators only
    instrumentation_requires_admin: bool = False

    def __post_init__(self) -> None:
        """Refuse an unknown mode, or Kerberos without a realm, naming the key."""
        if self.http_policy not in HTTP_POLICIES:
            raise ConfigError(
                f"security.http_policy: {self.http_policy!r} is not one of "
                + ", ".join(HTTP_POLICIES)
            )
        if self.http_policy != HTTP_ONLY:
            for key in ("ssl_certificate", "ssl_private_key"):
                if not getattr(self, key):
                    raise ConfigError(
                        f"security.{key}: http_policy {self.http_policy} serves HTTPS and "
                        "needs the PEM file of the servers' certificate and private key"
                    )
        for key in ("block_key_update_interval_min", "block_token_lifetime_min"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"security.{key}: must be positive, got {getattr(self, key)}")
        if self.authentication not in AUTHENTICATIONS:
            raise ConfigError(
                f"security.authentication: {self.authentication!r} is not one of "
                + ", ".join(AUTHENTICATIONS)
            )
        if self.kerberos and not self.realm:
            raise ConfigError("security.realm: Kerberos needs the realm of the principals")
        for key in (
            "delegation_token_max_lifetime_ms",
            "delegation_token_renew_interval_ms",
            "delegation_key_update_interval_ms",
        ):
            if getattr(self, key) <= 0:
                raise ConfigError(f"security.{key}: must be positive, not {getattr(self, key)}")
        names = [p.strip().lower() for p in self.rpc_protection.split(",") if p.strip()]
        bad = [n for n in names if n not in RPC_PROTECTIONS]
        if bad or not names:
            raise ConfigError(
                f"security.rpc_protection: {self.rpc_protection!r} is not a list of "
                + ", ".join(RPC_PROTECTIONS)
            )

        if self.data_transfer_protection.strip():
            names = [
                p.strip().lower() for p in self.data_transfer_protection.split(",") if p.strip()
            ]
            if any(n not in RPC_PROTECTIONS for n in names):
                raise ConfigError(
                    f"security.data_transfer_protection: {self.data_transfer_protection!r} is "
                    "not a list of " + ", ".join(RPC_PROTECTIONS)
                )
            if not self.kerberos or not self.block_tokens:
                raise ConfigError(
                    "security.data_transfer_protection needs authentication = kerberos and "
                    "block access tokens (the SASL password is the block token's)"
                )
        suites = self.data_transfer_cipher_suites.strip()
        if suites and suites != "AES/CTR/NoPadding":
            raise ConfigError(
                f"security.data_transfer_cipher_suites: {suites!r} is not a suite qjm has "
                "(AES/CTR/NoPadding, as HDFS)"
            )
        if suites and "privacy" not in self.data_transfer_protection.lower():
            raise ConfigError(
                "security.data_transfer_cipher_suites needs data_transfer_protection to "
                "include privacy (the keys travel sealed by the SASL layer)"
            )
        if self.data_transfer_cipher_key_bits not in (128, 192, 256):
            raise ConfigError(
                "security.data_transfer_cipher_key_bits: "
                f"{self.data_transfer_cipher_key_bits} is not 128, 192 or 256"
            )

    @property
    def kerberos(self) -> bool:
        """Whether callers authenticate with Kerberos."""
        return self.authentication == "kerberos"

    @property
    def block_tokens(self) -> bool:
        """Whether NameNodes issue, and DataNodes check, block access tokens (design §S.9)."""
        return self.kerberos if self.block_access_token is None else self.block_access_token


@dataclass(frozen=True)
class NameNodeConfig:
    """One NameNode ([namenodes.<name>])."""

    name: str
    rpc_address: str
    http_address: str
    name_dir: str
    zkfc_address: str = ""  # host:port of its ZKFC; "" is the RPC host and [zkfc] port
    https_address: str = ""  # dfs.namenode.https-address.<ns>.<nn>; "" none (design §S.13)


@dataclass(frozen=True)
class ProxyUserConfig:
    """Whom one real user may act for ([proxyusers.<user>]), as HDFS's
    hadoop.proxyuser.<user>.users / .groups / .hosts (comma-separated, `*` for any;
    design §S.14)."""

    name: str
    users: str = ""
    groups: str = ""
    hosts: str = ""


@dataclass(frozen=True)
class ClusterConfig:
    """A whole cluster's config."""

    nameservice: str = "ns1"
    journal_id: str = "ns1"
    journalnode: JournalNodeSettings = field(default_factory=JournalNodeSettings)
    journalnodes: dict[str, JournalNodeConfig] = field(default_factory=dict)
    qjournal: QJournalSettings = field(default_factory=QJournalSettings)
    namenode: NameNodeSettings = field(default_factory=NameNodeSettings)
    namenodes: dict[str, NameNodeConfig] = field(default_factory=dict)
    zookeeper: ZooKeeperSettings = field(default_factory=ZooKeeperSettings)
    zkfc: FailoverControllerSettings = field(default_factory=FailoverControllerSettings)
    datanode: DataNodeSettings = field(default_factory=DataNodeSettings)
    datanodes: dict[str, DataNodeConfig] = field(default_factory=dict)
    security: SecuritySettings = field(default_factory=SecuritySettings)
    proxyusers: dict[str, ProxyUserConfig] = field(default_factory=dict)
    source: str = "<defaults>"

    def __post_init__(self) -> None:
        """Refuse settings that contradict each other across sections, naming the keys."""
        lease, session = self.namenode.active_lease_ms, self.zookeeper.session_timeout_ms
        if lease and lease >= session:
            raise ConfigError(
                f"namenode.active_lease_ms ({lease}) must be below "
                f"zookeeper.session_timeout_ms ({session}): an active must lose its lease "
                "before ZooKeeper hands its role to the other NameNode (docs/design.md §N.1)"
            )
        if self.security.http_policy != HTTP_ONLY:  # each node needs its HTTPS port (§S.13)
            nodes: list[tuple[str, Any]] = [
                *((f"journalnodes.{n}", c) for n, c in self.journalnodes.items()),
                *((f"namenodes.{n}", c) for n, c in self.namenodes.items()),
                *((f"datanodes.{n}", c) for n, c in self.datanodes.items()),
            ]
            for section, node in nodes:
                if not node.https_address:
                    raise ConfigError(
                        f"{section}.https_address: security.http_policy = "
                        f"{self.security.http_policy} serves HTTPS and needs this node's "
                        "host:port for it"
                    )

    def active_lease_ms(self) -> int:
        """The active's lease (design §N.1): as set, else half the ZooKeeper session timeout."""
        if self.namenode.active_lease_ms:
            return self.namenode.active_lease_ms
        return max(MIN_ACTIVE_LEASE_MS, self.zookeeper.session_timeout_ms // 2)

    def shared_edits_uri(self) -> str:
        """The qjournal:// URI of all configured JournalNodes."""
        hosts = ";".join(jn.rpc_address for jn in self.journalnodes.values())
        return f"qjournal://{hosts}/{self.journal_id}"

    def _no_node(self, kind: str, name: str, known: str) -> str:
        """The error for a node name not in the config, in the terms of its source: a TOML
        section, or a Hadoop conf dir's key (design §A.6)."""
        if not Path(self.source).is_dir():
            return f"{self.source}: no [{kind}.{name}] section (known: {known})"
        where = {
            "journalnodes": "dfs.namenode.shared.edits.dir (jn1, jn2, ... in its order)",
            "namenodes": f"dfs.ha.namenodes.{self.nameservice}",
            "datanodes": "qjm.datanodes",
        }[kind]
        return f"{self.source}: {where} names no {kind[:-1]} {name} (known: {known})"

    def journalnode_named(self, name: str) -> JournalNodeConfig:
        """The JournalNode called name, or an error listing the known ones."""
        try:
            return self.journalnodes[name]
        except KeyError:
            known = ", ".join(self.journalnodes) or "none"
            raise ConfigError(self._no_node("journalnodes", name, known)) from None

    def namenode_named(self, name: str) -> NameNodeConfig:
        """The NameNode called name, or an error listing the known ones."""
        try:
            return self.namenodes[name]
        except KeyError:
            known = ", ".join(self.namenodes) or "none"
            raise ConfigError(self._no_node("namenodes", name, known)) from None

    def datanode_named(self, name: str) -> DataNodeConfig:
        """The DataNode called name, or an error listing the known ones."""
        try:
            return self.datanodes[name]
        except KeyError:
            known = ", ".join(self.datanodes) or "none"
            raise ConfigError(self._no_node("datanodes", name, known)) from None

    def zkfc_address_of(self, name: str) -> str:
        """host:port of the ZKFC of NameNode name (its zkfc_address, else RPC host, zkfc.port)."""
        nn = self.namenode_named(name)
        if nn.zkfc_address:
            return nn.zkfc_address
        host, _ = parse_address(nn.rpc_address, f"namenodes.{name}.rpc_address")
        return f"{host}:{self.zkfc.port}"


_SECTIONS = {
    "cluster",
    "journalnode",
    "journalnodes",
    "qjournal",
    "namenode",
    "namenodes",
    "zookeeper",
    "zkfc",
    "datanode",
    "datanodes",
    "security",
    "proxyusers",
}


def _typed(section: str, key: str, value: Any, want: type) -> Any:
    ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
    if not ok:
        raise ConfigError(
            f"{section}.{key}: expected {want.__name__}, got {type(value).__name__} {value!r}"
        )
    if want is int and value < 0:
        raise ConfigError(f"{section}.{key}: must not be negative, got {value}")
    return value


def _build(cls: type, section: str, table: Any, extra: dict[str, Any] | None = None) -> Any:
    if not isinstance(table, dict):
        raise ConfigError(f"[{section}] must be a table, got {type(table).__name__}")
    known = {f.name: f for f in fields(cls) if f.name not in (extra or {})}
    values: dict[str, Any] = dict(extra or {})
    for key, value in table.items():
        f = known.get(key)
        if f is None:
            raise ConfigError(
                f"unknown key {section}.{key} (known keys: {', '.join(sorted(known))})"
            )
        want = {"int": int, "bool": bool, "bool | None": bool, "str": str}[str(f.type)]
        values[key] = _typed(section, key, value, want)
    missing = [
        f.name
        for f in fields(cls)
        if f.name not in values and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ConfigError(f"[{section}] lacks the key {section}.{missing[0]}")
    return cls(**values)


def config_from_dict(data: dict[str, Any], source: str = "<dict>") -> ClusterConfig:
    """Validate a parsed TOML document into a ClusterConfig."""
    for name in data:
        if name not in _SECTIONS:
            raise ConfigError(
                f"{source}: unknown section [{name}] (known: {', '.join(sorted(_SECTIONS))})"
            )
    cluster = data.get("cluster", {})
    if not isinstance(cluster, dict):
        raise ConfigError(f"{source}: [cluster] must be a table")
    for key in cluster:
        if key not in ("nameservice", "journal_id"):
            raise ConfigError(
                f"{source}: unknown key cluster.{key} (known keys: journal_id, nameservice)"
            )
    nameservice = _typed("cluster", "nameservice", cluster.get("nameservice", "ns1"), str)
    journal_id = _typed("cluster", "journal_id", cluster.get("journal_id", nameservice), str)
    jns: dict[str, JournalNodeConfig] = {}
    tables = data.get("journalnodes", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: [journalnodes] must hold one table per JournalNode")
    for name, table in tables.items():
        jn = _build(JournalNodeConfig, f"journalnodes.{name}", table, {"name": name})
        parse_address(jn.rpc_address, f"journalnodes.{name}.rpc_address")
        parse_address(jn.http_address, f"journalnodes.{name}.http_address")
        if jn.https_address:
            parse_address(jn.https_address, f"journalnodes.{name}.https_address")
        if not Path(jn.edits_dir).is_absolute():
            raise ConfigError(
                f"journalnodes.{name}.edits_dir: {jn.edits_dir!r} is not an absolute path"
            )
        jns[name] = jn
    nns: dict[str, NameNodeConfig] = {}
    tables = data.get("namenodes", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: [namenodes] must hold one table per NameNode")
    for name, table in tables.items():
        nn = _build(NameNodeConfig, f"namenodes.{name}", table, {"name": name})
        parse_address(nn.rpc_address, f"namenodes.{name}.rpc_address")
        parse_address(nn.http_address, f"namenodes.{name}.http_address")
        if nn.https_address:
            parse_address(nn.https_address, f"namenodes.{name}.https_address")
        if nn.zkfc_address:
            parse_address(nn.zkfc_address, f"namenodes.{name}.zkfc_address")
        if not Path(nn.name_dir).is_absolute():
            raise ConfigError(f"namenodes.{name}.name_dir: {nn.name_dir!r} is not an absolute path")
        nns[name] = nn
    dns: dict[str, DataNodeConfig] = {}
    tables = data.get("datanodes", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: [datanodes] must hold one table per DataNode")
    for name, table in tables.items():
        dn = _build(DataNodeConfig, f"datanodes.{name}", table, {"name": name})
        for key in ("transfer_address", "ipc_address", "http_address", "https_address"):
            if key == "https_address" and not dn.https_address:
                continue
            parse_address(getattr(dn, key), f"datanodes.{name}.{key}")
        if not dn.dirs():
            raise ConfigError(f"datanodes.{name}.data_dirs names no directory")
        for d in dn.dirs():
            if not Path(d).is_absolute():
                raise ConfigError(f"datanodes.{name}.data_dirs: {d!r} is not an absolute path")
        dns[name] = dn
    proxies: dict[str, ProxyUserConfig] = {}
    tables = data.get("proxyusers", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: [proxyusers] must hold one table per real user")
    for name, table in tables.items():
        proxy = _build(ProxyUserConfig, f"proxyusers.{name}", table, {"name": name})
        for entry in (e.strip() for e in proxy.hosts.split(",")):
            if "/" in entry:  # a network: the rest are addresses, host names or *
                try:
                    ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    raise ConfigError(
                        f"{source}: proxyusers.{name}.hosts: {entry!r} is not a network "
                        "(address/prefix)"
                    ) from None
        proxies[name] = proxy
    try:
        return ClusterConfig(
            nameservice=nameservice,
            journal_id=journal_id,
            journalnode=_build(JournalNodeSettings, "journalnode", data.get("journalnode", {})),
            journalnodes=jns,
            qjournal=_build(QJournalSettings, "qjournal", data.get("qjournal", {})),
            namenode=_build(NameNodeSettings, "namenode", data.get("namenode", {})),
            namenodes=nns,
            zookeeper=_build(ZooKeeperSettings, "zookeeper", data.get("zookeeper", {})),
            zkfc=_build(FailoverControllerSettings, "zkfc", data.get("zkfc", {})),
            datanode=_build(DataNodeSettings, "datanode", data.get("datanode", {})),
            datanodes=dns,
            security=_build(SecuritySettings, "security", data.get("security", {})),
            proxyusers=proxies,
            source=source,
        )
    except ConfigError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(path: str | Path) -> ClusterConfig:
    """Read and validate a cluster TOML file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read config {p}: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(
            f"{p} is not a TOML file: byte {raw[e.start]:#04x} at offset {e.start} is not "
            "UTF-8 text"
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{p} is not valid TOML: {e}") from None
    return config_from_dict(data, str(p))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def dump_config(cfg: ClusterConfig) -> str:
    """Render a ClusterConfig as TOML that load_config reads back."""
    lines = [
        "# qjm cluster config",
        "[cluster]",
        f"nameservice = {_toml_value(cfg.nameservice)}",
        f"journal_id = {_toml_value(cfg.journal_id)}",
        "",
        "[journalnode]",
    ]
    lines += [
        f"{f.name} = {_toml_value(getattr(cfg.journalnode, f.name))}"
        for f in fields(cfg.journalnode)
    ]
    for jn in cfg.journalnodes.values():
        lines += ["", f"[journalnodes.{jn.name}]"]
        lines += [
            f"{k} = {_toml_value(getattr(jn, k))}"
            for k in ("rpc_address", "http_address", "edits_dir")
        ]
        if jn.https_address:
            lines.append(f"https_address = {_toml_value(jn.https_address)}")
    lines += ["", "[qjournal]"]
    lines += [
        f"{f.name} = {_toml_value(getattr(cfg.qjournal, f.name))}" for f in fields(cfg.qjournal)
    ]
    lines += ["", "[namenode]"]
    lines += [
        f"{f.name} = {_toml_value(getattr(cfg.namenode, f.name))}" for f in fields(cfg.namenode)
    ]
    for nn in cfg.namenodes.values():
        lines += ["", f"[namenodes.{nn.name}]"]
        lines += [
            f"{k} = {_toml_value(getattr(nn, k))}"
            for k in ("rpc_address", "http_address", "name_dir")
        ]
        if nn.zkfc_address:
            lines.append(f"zkfc_address = {_toml_value(nn.zkfc_address)}")
        if nn.https_address:
            lines.append(f"https_address = {_toml_value(nn.https_address)}")
    for section in ("zookeeper", "zkfc", "datanode", "security"):
        settings = getattr(cfg, section)
        lines += ["", f"[{section}]"]
        lines += [
            f"{f.name} = {_toml_value(getattr(settings, f.name))}"
            for f in fields(settings)
            if getattr(settings, f.name) is not None  # unset: its default follows others
        ]
    for dn in cfg.datanodes.values():
        lines += ["", f"[datanodes.{dn.name}]"]
        lines += [
            f"{k} = {_toml_value(getattr(dn, k))}"
            for k in ("transfer_address", "ipc_address", "http_address", "data_dirs")
        ]
        if dn.https_address:
            lines.append(f"https_address = {_toml_value(dn.https_address)}")
    for proxy in cfg.proxyusers.values():
        lines += ["", f"[proxyusers.{proxy.name}]"]
        lines += [f"{k} = {_toml_value(getattr(proxy, k))}" for k in ("users", "groups", "hosts")]
    return "\n".join(lines) + "\n"
