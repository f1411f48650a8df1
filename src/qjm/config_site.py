"""The cluster config read from HDFS's own files: core-site.xml and hdfs-site.xml (design §A.6).

One model, two readers: the properties of a Hadoop configuration directory are mapped onto
the dict `config_from_dict` takes, so every check of the TOML reader applies, and its errors
are rewritten to name the HDFS key and the file it came from. `site_properties` is the way
back (what `qjm cluster up` writes into hadoop-conf), so a written directory reads back into
the same ClusterConfig.

Per-node values follow HDFS's suffix rule: `<key>.<nameservice>.<node>` (a NameNode's
`dfs.namenode.rpc-address.ns1.nn1`), else `<key>.<nameservice>`, else `<key>` itself. The
NameNodes are dfs.ha.namenodes.<ns>; the JournalNodes the hosts of
dfs.namenode.shared.edits.dir, named jn1, jn2, ... in its order; the DataNodes are
qjm.datanodes (default: one, dn1). A setting qjm has and HDFS lacks is
`qjm.<section>.<field>` with the field's name in cluster.toml.
"""

from __future__ import annotations

import logging
import os
import pwd
import re
import xml.etree.ElementTree as ET
from dataclasses import MISSING, dataclass, fields
from fractions import Fraction
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from qjm.config import (
    HTTP_ONLY,
    ClusterConfig,
    DataNodeSettings,
    FailoverControllerSettings,
    JournalNodeSettings,
    NameNodeSettings,
    QJournalSettings,
    SecuritySettings,
    ZooKeeperSettings,
    config_from_dict,
    format_address,
    load_config,
)
from qjm.errors import ConfigError

log = logging.getLogger(__name__)

SITE_FILES = ("core-site.xml", "hdfs-site.xml")  # read in this order; a later one wins
MAX_SUBST = 20  # Hadoop's Configuration.MAX_SUBST: ${var} expansions of one value

SECTIONS: dict[str, type] = {
    "journalnode": JournalNodeSettings,
    "qjournal": QJournalSettings,
    "namenode": NameNodeSettings,
    "zookeeper": ZooKeeperSettings,
    "zkfc": FailoverControllerSettings,
    "datanode": DataNodeSettings,
    "security": SecuritySettings,
}

# Milliseconds per unit of Hadoop's Configuration.getTimeDuration suffixes.
_UNITS_MS = {
    "ns": Fraction(1, 1_000_000),
    "us": Fraction(1, 1000),
    "ms": Fraction(1),
    "s": Fraction(1000),
    "m": Fraction(60_000),
    "min": Fraction(60_000),
    "h": Fraction(3_600_000),
    "d": Fraction(86_400_000),
}
# Multipliers of Hadoop's size suffixes (StringUtils.TraditionalBinaryPrefix).
_SIZES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50, "e": 1 << 60}


@dataclass(frozen=True)
class Setting:
    """One HDFS key of a shared section's field. kind: int, bool, str, bytes, octal,
    thousandths (a fraction such as 0.999), or a duration "<HDFS unit>:<field unit>"."""

    key: str
    section: str
    field: str
    kind: str


def _s(key: str, section: str, field: str, kind: str = "int") -> Setting:
    return Setting(key, section, field, kind)


# Every shared setting with an HDFS key (the comments of qjm.config name them).
SETTINGS: tuple[Setting, ...] = (
    _s("dfs.journalnode.enable.sync", "journalnode", "sync_enabled", "bool"),
    _s("dfs.journalnode.sync.interval", "journalnode", "sync_interval_ms", "ms:ms"),
    _s("dfs.journalnode.edit-cache-size.bytes", "journalnode", "edit_cache_size_bytes", "bytes"),
    _s("ipc.maximum.data.length", "journalnode", "ipc_maximum_data_length", "bytes"),
    _s("hadoop.http.idle_timeout.ms", "journalnode", "http_idle_timeout_ms", "ms:ms"),
    _s("dfs.qjournal.queued-edits.limit.mb", "qjournal", "queued_edits_limit_mb"),
    _s("dfs.qjournal.start-segment.timeout.ms", "qjournal", "start_segment_timeout_ms", "ms:ms"),
    _s(
        "dfs.qjournal.prepare-recovery.timeout.ms",
        "qjournal",
        "prepare_recovery_timeout_ms",
        "ms:ms",
    ),
    _s(
        "dfs.qjournal.accept-recovery.timeout.ms",
        "qjournal",
        "accept_recovery_timeout_ms",
        "ms:ms",
    ),
    _s(
        "dfs.qjournal.finalize-segment.timeout.ms",
        "qjournal",
        "finalize_segment_timeout_ms",
        "ms:ms",
    ),
    _s(
        "dfs.qjournal.select-input-streams.timeout.ms",
        "qjournal",
        "select_input_streams_timeout_ms",
        "ms:ms",
    ),
    _s(
        "dfs.qjournal.get-journal-state.timeout.ms",
        "qjournal",
        "get_journal_state_timeout_ms",
        "ms:ms",
    ),
    _s("dfs.qjournal.new-epoch.timeout.ms", "qjournal", "new_epoch_timeout_ms", "ms:ms"),
    _s("dfs.qjournal.write-txns.timeout.ms", "qjournal", "write_txns_timeout_ms", "ms:ms"),
    _s("dfs.qjournal.http.read.timeout.ms", "qjournal", "http_timeout_ms", "ms:ms"),
    _s("dfs.namenode.checkpoint.txns", "namenode", "checkpoint_txns"),
    _s("dfs.namenode.checkpoint.period", "namenode", "checkpoint_period_s", "s:s"),
    _s("dfs.namenode.checkpoint.check.period", "namenode", "checkpoint_check_period_s", "s:s"),
    _s("dfs.namenode.num.checkpoints.retained", "namenode", "images_retained"),
    _s("dfs.ha.log-roll.period", "namenode", "roll_period_s", "s:s"),
    _s("dfs.permissions.enabled", "namenode", "permissions_enabled", "bool"),
    _s("dfs.permissions.superusergroup", "namenode", "superuser_group", "str"),
    _s("dfs.replication", "namenode", "default_replication"),
    _s("dfs.blocksize", "namenode", "block_size", "bytes"),
    _s("dfs.ls.limit", "namenode", "listing_limit"),
    _s("fs.permissions.umask-mode", "namenode", "umask", "octal"),
    _s("dfs.ha.automatic-failover.enabled", "namenode", "automatic_failover", "bool"),
    _s("dfs.namenode.enable.retrycache", "namenode", "retry_cache_enabled", "bool"),
    _s(
        "dfs.namenode.retrycache.expirytime.millis",
        "namenode",
        "retry_cache_expiry_ms",
        "ms:ms",
    ),
    _s("dfs.namenode.fs-limits.max-component-length", "namenode", "max_component_length"),
    _s("dfs.namenode.fs-limits.max-directory-items", "namenode", "max_directory_items"),
    _s("dfs.namenode.lease-hard-limit-sec", "namenode", "lease_hard_limit_ms", "s:ms"),
    _s("dfs.namenode.lease-recheck-interval-ms", "namenode", "lease_recheck_ms", "ms:ms"),
    _s("dfs.hosts.exclude", "namenode", "hosts_exclude", "str"),
    _s(
        "dfs.namenode.redundancy.interval.seconds",
        "namenode",
        "redundancy_interval_ms",
        "s:ms",
    ),
    _s("dfs.heartbeat.interval", "datanode", "heartbeat_interval_ms", "s:ms"),
    _s("dfs.namenode.heartbeat.recheck-interval", "datanode", "heartbeat_recheck_ms", "ms:ms"),
    _s("dfs.blockreport.intervalMsec", "datanode", "block_report_interval_ms", "ms:ms"),
    _s(
        "dfs.blockreport.incremental.intervalMsec",
        "datanode",
        "incremental_report_delay_ms",
        "ms:ms",
    ),
    _s("dfs.bytes-per-checksum", "datanode", "bytes_per_checksum", "bytes"),
    _s("dfs.datanode.max.transfer.threads", "datanode", "max_transfer_threads"),
    _s("dfs.client.socket-timeout", "datanode", "socket_timeout_ms", "ms:ms"),
    _s("dfs.datanode.du.reserved", "datanode", "du_reserved_bytes", "bytes"),
    _s("dfs.namenode.replication.min", "datanode", "min_replication"),
    _s("dfs.namenode.safemode.threshold-pct", "datanode", "safemode_threshold_pct", "thousandths"),
    _s("dfs.namenode.safemode.extension", "datanode", "safemode_extension_ms", "ms:ms"),
    _s(
        "dfs.block.scanner.volume.bytes.per.second",
        "datanode",
        "scan_bytes_per_second",
        "bytes",
    ),
    _s("dfs.datanode.scan.period.hours", "datanode", "scan_period_ms", "h:ms"),
    _s("dfs.namenode.replication.max-streams", "datanode", "replication_max_streams"),
    _s(
        "dfs.namenode.replication.max-streams-hard-limit",
        "datanode",
        "replication_streams_hard_limit",
    ),
    _s("dfs.datanode.failed.volumes.tolerated", "datanode", "failed_volumes_tolerated"),
    _s("ha.zookeeper.quorum", "zookeeper", "quorum", "str"),
    _s("ha.zookeeper.session-timeout.ms", "zookeeper", "session_timeout_ms", "ms:ms"),
    _s("ha.zookeeper.parent-znode", "zookeeper", "parent_znode", "str"),
    _s("ha.zookeeper.acl", "zookeeper", "acl", "str"),
    _s("ha.zookeeper.auth", "zookeeper", "auth", "str"),
    _s("dfs.ha.zkfc.port", "zkfc", "port"),
    _s("dfs.ha.fencing.methods", "zkfc", "fencing_methods", "str"),
    _s("dfs.ha.fencing.ssh.private-key-files", "zkfc", "ssh_private_key_files", "str"),
    _s("dfs.ha.fencing.ssh.connect-timeout", "zkfc", "ssh_connect_timeout_ms", "ms:ms"),
    _s(
        "ha.failover-controller.graceful-fence.rpc-timeout.ms",
        "zkfc",
        "graceful_fence_timeout_ms",
        "ms:ms",
    ),
    _s(
        "ha.failover-controller.new-active.rpc-timeout.ms",
        "zkfc",
        "new_active_timeout_ms",
        "ms:ms",
    ),
    _s("ha.health-monitor.check-interval.ms", "zkfc", "health_check_interval_ms", "ms:ms"),
    _s("ha.health-monitor.rpc-timeout.ms", "zkfc", "health_rpc_timeout_ms", "ms:ms"),
    _s("hadoop.security.authentication", "security", "authentication", "str"),
    _s("dfs.namenode.kerberos.principal", "security", "namenode_principal", "principal"),
    _s("dfs.namenode.keytab.file", "security", "namenode_keytab", "str"),
    _s("dfs.journalnode.kerberos.principal", "security", "journalnode_principal", "principal"),
    _s("dfs.journalnode.keytab.file", "security", "journalnode_keytab", "str"),
    _s("dfs.datanode.kerberos.principal", "security", "datanode_principal", "principal"),
    _s("dfs.datanode.keytab.file", "security", "datanode_keytab", "str"),
    _s("dfs.web.authentication.kerberos.principal", "security", "http_principal", "principal"),
    _s("hadoop.rpc.protection", "security", "rpc_protection", "str"),
    _s("dfs.data.transfer.protection", "security", "data_transfer_protection", "str"),
    _s(
        "dfs.encrypt.data.transfer.cipher.suites",
        "security",
        "data_transfer_cipher_suites",
        "str",
    ),
    _s(
        "dfs.encrypt.data.transfer.cipher.key.bitlength",
        "security",
        "data_transfer_cipher_key_bits",
    ),
    _s("dfs.block.access.token.enable", "security", "block_access_token", "bool"),
    _s(
        "dfs.block.access.key.update.interval",
        "security",
        "block_key_update_interval_min",
        "min:min",
    ),
    _s("dfs.block.access.token.lifetime", "security", "block_token_lifetime_min", "min:min"),
    _s(
        "dfs.namenode.delegation.token.max-lifetime",
        "security",
        "delegation_token_max_lifetime_ms",
        "ms:ms",
    ),
    _s(
        "dfs.namenode.delegation.token.renew-interval",
        "security",
        "delegation_token_renew_interval_ms",
        "ms:ms",
    ),
    _s(
        "dfs.namenode.delegation.key.update-interval",
        "security",
        "delegation_key_update_interval_ms",
        "ms:ms",
    ),
    _s("dfs.http.policy", "security", "http_policy", "str"),
    _s("dfs.cluster.administrators", "security", "cluster_administrators", "str"),
    _s(
        "hadoop.security.instrumentation.requires.admin",
        "security",
        "instrumentation_requires_admin",
        "bool",
    ),
)
_BY_FIELD = {(s.section, s.field): s for s in SETTINGS}

# Per-node keys: (HDFS key, TOML field); HDFS's defaults where a key is not set at all.
NN_KEYS = (
    ("dfs.namenode.rpc-address", "rpc_address"),
    ("dfs.namenode.http-address", "http_address"),
    ("dfs.namenode.https-address", "https_address"),
    ("dfs.namenode.name.dir", "name_dir"),
)
JN_KEYS = (
    ("dfs.journalnode.http-address", "http_address"),
    ("dfs.journalnode.https-address", "https_address"),
    ("dfs.journalnode.edits.dir", "edits_dir"),
)
DN_KEYS = (
    ("dfs.datanode.address", "transfer_address"),
    ("dfs.datanode.ipc.address", "ipc_address"),
    ("dfs.datanode.http.address", "http_address"),
    ("dfs.datanode.https.address", "https_address"),
    ("dfs.datanode.data.dir", "data_dirs"),
)
ZKFC_PORT = "dfs.ha.zkfc.port"
JN_RPC = "dfs.journalnode.rpc-address"
SHARED_EDITS = "dfs.namenode.shared.edits.dir"
HDFS_DEFAULTS = {
    "hadoop.tmp.dir": "/tmp/hadoop-${user.name}",
    "dfs.namenode.http-address": "0.0.0.0:9870",
    "dfs.namenode.https-address": "0.0.0.0:9871",
    "dfs.namenode.name.dir": "file://${hadoop.tmp.dir}/dfs/name",
    "dfs.journalnode.rpc-address": "0.0.0.0:8485",
    "dfs.journalnode.http-address": "0.0.0.0:8480",
    "dfs.journalnode.https-address": "0.0.0.0:8481",
    "dfs.journalnode.edits.dir": "/tmp/hadoop/dfs/journalnode/",
    "dfs.datanode.address": "0.0.0.0:9866",
    "dfs.datanode.ipc.address": "0.0.0.0:9867",
    "dfs.datanode.http.address": "0.0.0.0:9864",
    "dfs.datanode.https.address": "0.0.0.0:9865",
    "dfs.datanode.data.dir": "file://${hadoop.tmp.dir}/dfs/data",
}
# Old names Hadoop still reads (Configuration's deprecations), as the new key.
DEPRECATED = {
    "fs.default.name": "fs.defaultFS",
    "dfs.umaskmode": "fs.permissions.umask-mode",
    "dfs.block.size": "dfs.blocksize",
    "dfs.name.dir": "dfs.namenode.name.dir",
    "dfs.data.dir": "dfs.datanode.data.dir",
    "dfs.permissions": "dfs.permissions.enabled",
    "dfs.permissions.supergroup": "dfs.permissions.superusergroup",
    "dfs.http.address": "dfs.namenode.http-address",
    "dfs.https.address": "dfs.namenode.https-address",
    "dfs.socket.timeout": "dfs.client.socket-timeout",
    "dfs.max-repl-streams": "dfs.namenode.replication.max-streams",
    "dfs.replication.min": "dfs.namenode.replication.min",
    "dfs.safemode.threshold.pct": "dfs.namenode.safemode.threshold-pct",
    "dfs.safemode.extension": "dfs.namenode.safemode.extension",
}
# Keys only clients read: not listed as unused (qjm's own clients have their settings).
CLIENT_PREFIXES = ("dfs.client.", "ipc.client.", "fs.trash.")
_WILDCARDS = ("0.0.0.0", "::", "")


@dataclass
class Site:
    """The properties of a Hadoop conf dir, each with the file it came from."""

    directory: Path
    props: dict[str, str]
    origin: dict[str, Path]

    def where(self, key: str) -> str:
        """The file a key came from, else the directory (for a key not set)."""
        return str(self.origin.get(key, self.directory))


def is_site_dir(path: str | Path) -> bool:
    """Whether path is a Hadoop conf dir (it holds hdfs-site.xml) or a *-site.xml file."""
    p = Path(path)
    return (p.is_dir() and (p / "hdfs-site.xml").is_file()) or p.name.endswith("-site.xml")


def conf_dir_of(path: str | Path) -> Path:
    """The conf dir path names: itself, or the directory of a *-site.xml file."""
    p = Path(path)
    return p.parent if p.name.endswith("-site.xml") else p


def read_site_file(path: Path) -> dict[str, str]:
    """The name → raw value properties of one *-site.xml (`<final>` is ignored)."""
    try:
        root = ET.parse(path).getroot()
    except OSError as e:
        raise ConfigError(f"cannot read {path}: {e.strerror}") from None
    except ET.ParseError as e:
        raise ConfigError(f"{path} is not a Hadoop configuration file: {e}") from None
    if root.tag != "configuration":
        raise ConfigError(f"{path}: the root element is <{root.tag}>, not <configuration>")
    for element in root.iter():
        if element.tag.rpartition("}")[2] == "include":  # XInclude (xi:include)
            raise ConfigError(
                f"{path}: <xi:include> is not read by qjm; put the included properties in "
                "the file itself"
            )
    out: dict[str, str] = {}
    for prop in root.iter("property"):
        name = prop.findtext("name", prop.get("name"))
        value = prop.findtext("value", prop.get("value"))
        if name is None or not name.strip():
            raise ConfigError(f"{path}: a <property> without a <name>")
        out[DEPRECATED.get(name.strip(), name.strip())] = (value or "").strip()
    return out


def read_site(directory: str | Path) -> Site:
    """core-site.xml then hdfs-site.xml of directory (core-site.xml may be absent)."""
    d = conf_dir_of(directory)
    if not (d / "hdfs-site.xml").is_file():
        raise ConfigError(f"{d} holds no hdfs-site.xml (a Hadoop conf dir holds it)")
    props: dict[str, str] = {}
    origin: dict[str, Path] = {}
    for name in SITE_FILES:
        path = d / name
        if not path.is_file():
            continue
        for key, value in read_site_file(path).items():
            props[key] = value
            origin[key] = path
    site = Site(d, props, origin)
    site.props = {k: substitute(site, k, v) for k, v in props.items()}
    return site


def _system_property(name: str) -> str | None:
    """The Java system properties a Hadoop config uses in ${...}, as a JVM would set them."""
    if name == "user.name":  # the JVM's: the OS account, whatever HADOOP_USER_NAME says
        return pwd.getpwuid(os.getuid()).pw_name
    if name == "user.home":
        return str(Path.home())
    if name == "user.dir":
        return os.getcwd()
    if name == "java.io.tmpdir":
        return "/tmp"
    return None


_VAR = re.compile(r"\$\{([^${}\s]+)\}")


def substitute(site: Site, key: str, value: str) -> str:
    """value with ${var} expanded as Hadoop's Configuration does: ${env.NAME} (also
    ${env.NAME:-default} and ${env.NAME-default}), a system property, another key; an
    unbound one stays as written; more than MAX_SUBST rounds is an error naming the key."""
    for _ in range(MAX_SUBST):
        m = _VAR.search(value)
        if m is None:
            return value
        var = m.group(1)
        got: str | None
        if var.startswith("env.") and len(var) > 4:
            env = re.fullmatch(r"((?:[^:-]|:(?!-))*)(:-|-)?(.*)", var[4:], re.S)
            assert env is not None  # the pattern matches any text
            name, sep, default = env.group(1), env.group(2), env.group(3)
            if sep is None:
                got = os.environ.get(name)
            elif sep == ":-":
                got = os.environ.get(name) or default
            else:
                got = os.environ.get(name, default)
        else:
            got = _system_property(var)
        if got is None:
            got = site.props.get(var, HDFS_DEFAULTS.get(var))
        if got is None:
            return value  # unbound: Hadoop leaves the rest as written
        value = value[: m.start()] + got + value[m.end() :]
    if _VAR.search(value):
        raise ConfigError(
            f"{site.where(key)}: {key}: variable substitution depth too large "
            f"({MAX_SUBST}): {value!r}"
        )
    return value


class _Reader:
    """Maps one Site onto config_from_dict's dict, remembering which key set each field."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.used: set[str] = set()
        self.names: dict[str, str] = {}  # TOML path -> the HDFS key that sets it

    def err(self, key: str, text: str) -> ConfigError:
        return ConfigError(f"{self.site.where(key)}: {key}: {text}")

    def get(self, key: str) -> str | None:
        if key in self.site.props:
            self.used.add(key)
            return self.site.props[key]
        return None

    def node_value(self, base: str, *suffix: str) -> tuple[str | None, str]:
        """The value of base for a node: base.<s1>.<s2>, base.<s1>, base; and its key (the
        most specific one where none is set)."""
        found: tuple[str | None, str] = (None, ".".join((base, *suffix)))
        for n in range(len(suffix), -1, -1):
            key = ".".join((base, *suffix[:n]))
            value = self.get(key)  # a shadowed key counts as read: other nodes fall back to it
            if value is not None and found[0] is None:
                found = (value, key)
        return found

    def default(self, base: str, key: str) -> str:
        value = HDFS_DEFAULTS[base]
        return substitute(self.site, key, value)

    def number(self, key: str, text: str, kind: str) -> int:
        """An int of kind from text, naming key on error."""
        t = text.strip()
        try:
            if kind == "int":  # as Java's Long.parseLong: no 1_000, no 0x
                if not re.fullmatch(r"[-+]?\d+", t):
                    raise ValueError
                return int(t)
            if kind == "bytes":
                m = re.fullmatch(r"(\d+)\s*([kmgtpe]?)b?", t.lower())
                if m is None:
                    raise ValueError
                return int(m.group(1)) * _SIZES.get(m.group(2), 1)
            if kind == "octal":
                if not re.fullmatch(r"[0-7]{1,4}", t):
                    raise ValueError
                return int(t, 8)
            if kind == "thousandths":
                frac = Fraction(t) * 1000
                if frac.denominator != 1:
                    raise self.err(key, f"{t!r} is finer than thousandths (0.999)")
                return int(frac)
            hdfs_unit, field_unit = kind.split(":")
            m = re.fullmatch(r"(\d+)\s*([a-z]*)", t.lower())
            if m is None or (m.group(2) and m.group(2) not in _UNITS_MS):
                raise ValueError
            ms = int(m.group(1)) * _UNITS_MS[m.group(2) or hdfs_unit]
            value = ms / _UNITS_MS[field_unit]
            if value.denominator != 1:
                raise self.err(key, f"{t!r} is not a whole number of {field_unit}")
            return int(value)
        except (ValueError, ZeroDivisionError):
            what = {
                "int": "a number",
                "bytes": "a size (a number, or with k, m, g, t suffix)",
                "octal": "an octal mode (such as 022)",
                "thousandths": "a fraction (such as 0.999)",
            }.get(kind, f"a duration (a number of {kind.split(':')[0]}, or with a unit: 30s)")
            raise self.err(key, f"{t!r} is not {what}") from None

    def typed(self, key: str, text: str, kind: str) -> Any:
        """The TOML value of one property of kind."""
        if kind in ("str", "principal"):
            return text
        if kind == "bool":
            if text.lower() not in ("true", "false"):
                raise self.err(key, f"{text!r} is not true or false")
            return text.lower() == "true"
        return self.number(key, text, kind)


def _split_principal(value: str) -> tuple[str, str]:
    name, _, realm = value.partition("@")
    return name, realm


def _first_dir(reader: _Reader, key: str, value: str, many: bool) -> str:
    """A dir list's first (or, many, every) entry as absolute paths: file:// URIs and
    storage-type prefixes ([DISK]) are taken off."""
    out: list[str] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        entry = re.sub(r"^\[[A-Za-z_]+\]", "", entry)
        if "://" in entry or entry.startswith("file:"):
            uri = urlparse(entry)
            if uri.scheme != "file":
                raise reader.err(key, f"{entry!r} is not a local directory (file:// or a path)")
            entry = unquote(uri.path)
        out.append(entry)
    if not out:
        raise reader.err(key, "names no directory")
    return ",".join(out) if many else out[0]


def _parse_qjournal(reader: _Reader, key: str, value: str) -> tuple[list[str], str]:
    """The JournalNodes' host:port and the journal id of a qjournal:// URI."""
    m = re.fullmatch(r"qjournal://([^/]+)/([^/]+)/?", value)
    if m is None:
        raise reader.err(key, f"{value!r} is not qjournal://host:port;host:port;.../journal-id")
    hosts = [h.strip() for h in m.group(1).split(";") if h.strip()]
    for h in hosts:
        _check_address(reader, key, h)
    if len(set(hosts)) != len(hosts):
        raise reader.err(key, f"{value!r} names a JournalNode twice")
    return hosts, m.group(2)


def _check_address(reader: _Reader, key: str, value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host.strip("[]") or not port.isdigit() or int(port) > 65535:
        raise reader.err(key, f"{value!r} is not host:port")
    return host.strip("[]"), int(port)


def _on_host(reader: _Reader, key: str, value: str, host: str) -> str:
    """A per-host address (its wildcard host replaced by the node's own host)."""
    h, port = _check_address(reader, key, value)
    return format_address(host if h in _WILDCARDS else h, port)


def site_to_dict(site: Site) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The dict config_from_dict takes, the TOML path → HDFS key of each value, and the
    keys qjm does not use; a key qjm reads that is wrong is an error naming it."""
    r = _Reader(site)
    data: dict[str, Any] = {}
    nss = [n.strip() for n in (r.get("dfs.nameservices") or "").split(",") if n.strip()]
    if len(nss) != 1:
        what = "is not set" if not nss else f"names {len(nss)} nameservices ({', '.join(nss)})"
        raise r.err("dfs.nameservices", f"{what}; qjm serves exactly one nameservice (design §A.6)")
    ns = nss[0]
    default_fs = r.get("fs.defaultFS")
    if default_fs and default_fs.startswith("hdfs://"):
        host = urlparse(default_fs).hostname or ""
        if host != ns.lower():
            raise r.err("fs.defaultFS", f"{default_fs!r} is not hdfs://{ns} (dfs.nameservices)")
    shared, shared_key = r.node_value(SHARED_EDITS, ns)
    jn_hosts: list[str] = []
    journal_id = ns
    if shared:
        jn_hosts, journal_id = _parse_qjournal(r, shared_key, shared)
    data["cluster"] = {"nameservice": ns, "journal_id": journal_id}
    for section, cls in SECTIONS.items():  # what names a field no key set
        for f in fields(cls):
            s = _BY_FIELD.get((section, f.name))
            r.names[f"{section}.{f.name}"] = s.key if s else f"qjm.{section}.{f.name}"
    r.names["cluster.nameservice"] = "dfs.nameservices"
    r.names["cluster.journal_id"] = shared_key

    # the shared sections: HDFS keys, then qjm.<section>.<field>
    for s in SETTINGS:
        value, key = r.node_value(s.key, ns) if s.section == "namenode" else (r.get(s.key), s.key)
        if value is None:
            continue
        r.names[f"{s.section}.{s.field}"] = key
        v = r.typed(key, value, s.kind)
        if s.kind == "principal":
            name, realm = _split_principal(v)
            data.setdefault("_realms", []).append((key, realm))
            v = name if realm else v
        data.setdefault(s.section, {})[s.field] = v
    for key in [k for k in site.props if k.startswith("qjm.")]:
        _qjm_key(r, data, key)
    _realm(r, data)
    sec = data.get("security", {})
    if sec.get("block_access_token") == (sec.get("authentication") == "kerberos"):
        del sec["block_access_token"]  # what unset means (design §S.9): the same config

    plain_http = data.get("security", {}).get("http_policy", HTTP_ONLY) == HTTP_ONLY
    nn_names = [n.strip() for n in (r.get(f"dfs.ha.namenodes.{ns}") or "").split(",") if n.strip()]
    if len(set(nn_names)) != len(nn_names):
        raise r.err(f"dfs.ha.namenodes.{ns}", "names a NameNode twice")
    nns: dict[str, dict[str, Any]] = {}
    nn_host: dict[str, str] = {}
    for nn in nn_names:
        table: dict[str, Any] = {}
        rpc, rpc_key = r.node_value("dfs.namenode.rpc-address", ns, nn)
        if rpc is None or rpc_key != f"dfs.namenode.rpc-address.{ns}.{nn}":
            raise r.err(
                f"dfs.namenode.rpc-address.{ns}.{nn}",
                f"is not set (NameNode {nn} of dfs.ha.namenodes.{ns})",
            )
        rpc_host, _ = _check_address(r, rpc_key, rpc)
        nn_host[nn] = rpc_host
        table["rpc_address"] = rpc
        r.names[f"namenodes.{nn}.rpc_address"] = rpc_key
        for base, fname in NN_KEYS[1:]:
            value, key = r.node_value(base, ns, nn)
            r.names[f"namenodes.{nn}.{fname}"] = key
            if fname == "https_address" and value is None and plain_http:
                continue
            if value is None:
                value = r.default(base, key)
            if fname == "name_dir":
                table[fname] = _first_dir(r, key, value, many=False)
            else:
                table[fname] = _on_host(r, key, value, rpc_host)
        port, port_key = r.node_value(ZKFC_PORT, ns, nn)
        if port is not None and port_key != ZKFC_PORT:
            table["zkfc_address"] = format_address(rpc_host, r.number(port_key, port, "int"))
            r.names[f"namenodes.{nn}.zkfc_address"] = port_key
        nns[nn] = table
    data["namenodes"] = nns

    rpc_default = r.get(JN_RPC)
    if rpc_default is not None:
        _check_address(r, JN_RPC, rpc_default)
    jns: dict[str, dict[str, Any]] = {}
    jn_host: dict[str, str] = {}
    for i, rpc in enumerate(jn_hosts, start=1):
        jn = f"jn{i}"
        host, _ = _check_address(r, shared_key, rpc)
        jn_host[jn] = host
        table = {"rpc_address": rpc}
        r.names[f"journalnodes.{jn}.rpc_address"] = shared_key
        for base, fname in JN_KEYS:
            value, key = r.node_value(base, ns, jn)
            r.names[f"journalnodes.{jn}.{fname}"] = key
            if fname == "https_address" and value is None and plain_http:
                continue
            if value is None:
                value = r.default(base, key)
            if fname == "edits_dir":
                table[fname] = _first_dir(r, key, value, many=False).rstrip("/") or "/"
            else:
                table[fname] = _on_host(r, key, value, host)
        jns[jn] = table
    data["journalnodes"] = jns

    dn_value = r.get("qjm.datanodes")
    dn_names = ["dn1"] if dn_value is None else [n.strip() for n in dn_value.split(",")]
    dn_names = [n for n in dn_names if n]
    dns: dict[str, dict[str, Any]] = {}
    for dn in dn_names:
        table = {}
        for base, fname in DN_KEYS:
            value, key = r.node_value(base, ns, dn)
            r.names[f"datanodes.{dn}.{fname}"] = key
            if fname == "https_address" and value is None and plain_http:
                continue
            if value is None:
                value = r.default(base, key)
            if fname == "data_dirs":
                table[fname] = _first_dir(r, key, value, many=True)
            else:
                _check_address(r, key, value)
                table[fname] = value
        dns[dn] = table
    data["datanodes"] = dns

    proxies: dict[str, dict[str, str]] = {}
    for key in [k for k in site.props if k.startswith("hadoop.proxyuser.")]:
        user, _, what = key[len("hadoop.proxyuser.") :].rpartition(".")
        if not user or what not in ("users", "groups", "hosts"):
            raise r.err(key, "is not hadoop.proxyuser.<user>.users, .groups or .hosts")
        proxies.setdefault(user, {})[what] = r.get(key) or ""
        r.names[f"proxyusers.{user}.{what}"] = key
    data["proxyusers"] = proxies

    _check_shared(r, "journalnodes", jns, JN_KEYS, jn_host)
    _check_shared(r, "namenodes", nns, NN_KEYS, nn_host)
    _check_shared(r, "datanodes", dns, DN_KEYS[:4], {})
    nodes = {"namenodes": nn_names, "journalnodes": list(jns), "datanodes": dn_names}
    unused = _unused(r, ns, nodes)
    return data, r.names, unused


def _qjm_key(r: _Reader, data: dict[str, Any], key: str) -> None:
    """One qjm.<section>.<field> property into data."""
    if key == "qjm.datanodes":
        return
    parts = key.split(".")
    cls = SECTIONS.get(parts[1]) if len(parts) == 3 else None
    known = {f.name: f for f in fields(cls)} if cls else {}
    if cls is None or parts[2] not in known:
        raise r.err(
            key,
            "is not a qjm key (qjm.<section>.<field> of a cluster.toml section: "
            + ", ".join(SECTIONS)
            + "; or qjm.datanodes)",
        )
    section, name = parts[1], parts[2]
    value = r.get(key) or ""
    want = str(known[name].type)
    hdfs = _BY_FIELD.get((section, name))
    if hdfs is not None and hdfs.key in r.site.props:
        raise r.err(key, f"sets the field {hdfs.key} sets too; keep one of them")
    v: Any = value
    if want.startswith("bool"):
        v = r.typed(key, value, "bool")
    elif want == "int":
        v = r.number(key, value, "int")
    data.setdefault(section, {})[name] = v
    r.names[f"{section}.{name}"] = key


def _realm(r: _Reader, data: dict[str, Any]) -> None:
    """security.realm: qjm.security.realm, else the one realm the principals name."""
    realms = data.pop("_realms", [])
    named = {realm for _, realm in realms if realm}
    sec = data.get("security", {})
    if "realm" in sec:
        for key, realm in realms:
            if realm and realm != sec["realm"]:
                raise r.err(key, f"names realm {realm}, not qjm.security.realm {sec['realm']}")
        return
    if len(named) > 1:
        keys = ", ".join(k for k, realm in realms if realm)
        raise r.err(keys, f"the principals name several realms ({', '.join(sorted(named))})")
    if named:
        sec = data.setdefault("security", {})
        sec["realm"] = named.pop()
        r.names["security.realm"] = next(k for k, realm in realms if realm)


def _check_shared(
    r: _Reader,
    section: str,
    nodes: dict[str, dict[str, Any]],
    bases: tuple[tuple[str, str], ...],
    hosts: dict[str, str],
) -> None:
    """Two nodes of a kind may not share an address, nor on one host a directory (a
    per-host key left to serve several nodes of one file)."""
    for base, fname in bases:
        seen: dict[str, str] = {}
        for name, table in nodes.items():
            value = table.get(fname)
            if not value:
                continue
            for one in str(value).split(","):
                where = f"{hosts.get(name, '')} {one}" if fname.endswith("dir") else one
                if where in seen:
                    raise r.err(
                        r.names[f"{section}.{name}.{fname}"],
                        f"{section} {seen[where]} and {name} both get {one!r}; give each "
                        f"its own, {base}.<nameservice>.<node> (design §A.6)",
                    )
                seen[where] = name


_NODE_BASES = (
    *(b for b, _ in NN_KEYS),
    ZKFC_PORT,
    *(b for b, _ in JN_KEYS),
    JN_RPC,
    *(b for b, _ in DN_KEYS),
)


def _unused(r: _Reader, ns: str, nodes: dict[str, list[str]]) -> list[str]:
    """The keys qjm does not read; a per-node key naming an unknown node, or an unknown
    nameservice, is an error."""
    out: list[str] = []
    for key in sorted(r.site.props):
        if key in r.used:
            continue
        if key.startswith("dfs.ha.namenodes."):
            raise r.err(key, f"names nameservice {key[17:]!r}, not dfs.nameservices ({ns})")
        for base in _NODE_BASES:
            if not key.startswith(base + "."):
                continue
            parts = key[len(base) + 1 :].split(".")
            if len(parts) != 2:
                continue
            kind = (
                "namenodes"
                if base.startswith(("dfs.namenode", ZKFC_PORT))
                else "journalnodes"
                if base.startswith("dfs.journalnode")
                else "datanodes"
            )
            if parts[0] != ns:
                raise r.err(key, f"names nameservice {parts[0]!r}, not dfs.nameservices ({ns})")
            known = nodes[kind]
            rule = {
                "namenodes": f"dfs.ha.namenodes.{ns}",
                "journalnodes": f"{SHARED_EDITS}: jn1, jn2, ... in its order",
                "datanodes": "qjm.datanodes",
            }[kind]
            raise r.err(
                key,
                f"names {kind[:-1]} {parts[1]!r}, not one of {', '.join(known) or 'none'} ({rule})",
            )
        if not key.startswith(CLIENT_PREFIXES):
            out.append(key)
    return out


def _rewrite(message: str, names: dict[str, str], site: Site) -> str:
    """A config_from_dict error with each TOML path replaced by the HDFS key that set it,
    after the file of the first such key."""
    text = message
    prefix = f"{site.directory}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
    first: str | None = None
    for path in sorted(names, key=len, reverse=True):
        pattern = re.compile(rf"(?<![\w.\[]){re.escape(path)}(?![\w])")
        if pattern.search(text):
            first = first or names[path]
            text = pattern.sub(names[path], text)
    return f"{site.where(first) if first else site.directory}: {text}"


def load_site_config(directory: str | Path) -> ClusterConfig:
    """Read and validate the cluster config of a Hadoop conf dir (or of one of its files)."""
    site = read_site(directory)
    data, names, unused = site_to_dict(site)
    try:
        cfg = config_from_dict(data, str(site.directory))
    except ConfigError as e:
        raise ConfigError(_rewrite(str(e), names, site)) from None
    if unused:
        log.warning(
            "%s: %d key(s) qjm does not use: %s", site.directory, len(unused), ", ".join(unused)
        )
    return cfg


def load_cluster_config(path: str | Path) -> ClusterConfig:
    """The cluster config at path: a Hadoop conf dir (or one of its *-site.xml files),
    else a cluster TOML file."""
    p = Path(path)
    return load_site_config(p) if p.is_dir() or is_site_dir(p) else load_config(p)


def key_name(cfg: ClusterConfig, path: str) -> str:
    """How the operator sets a shared setting's TOML path (zkfc.fencing_methods): its HDFS
    key, or qjm.<path>, where cfg came from a Hadoop conf dir; else the path itself."""
    if not is_site_dir(cfg.source):
        return path
    section, _, name = path.partition(".")
    s = _BY_FIELD.get((section, name))
    return s.key if s is not None else f"qjm.{path}"


def unused_keys(directory: str | Path) -> list[str]:
    """The keys of a Hadoop conf dir qjm does not read (client-only keys left out)."""
    return site_to_dict(read_site(directory))[2]


def _write_number(value: int, kind: str) -> str:
    if kind == "octal":
        return f"{value:03o}"
    if kind == "thousandths":
        return str(Fraction(value, 1000).__float__())
    if ":" in kind:
        hdfs_unit, field_unit = kind.split(":")
        ms = value * _UNITS_MS[field_unit]
        whole = ms / _UNITS_MS[hdfs_unit]
        return str(int(whole)) if whole.denominator == 1 else f"{int(ms)}ms"
    return str(value)


def settings_properties(
    cfg: ClusterConfig, with_defaults: bool = False
) -> tuple[dict[str, str], dict[str, str]]:
    """The shared settings of cfg as core-site.xml's and hdfs-site.xml's properties: those
    off their defaults (all of them with_defaults), by HDFS key, else qjm.<section>.<field>."""
    core: dict[str, str] = {}
    hdfs: dict[str, str] = {}
    realm = cfg.security.realm
    for section, cls in SECTIONS.items():
        settings = getattr(cfg, section)
        for f in fields(cls):
            value = getattr(settings, f.name)
            if not with_defaults and f.default is not MISSING and value == f.default:
                continue
            s = _BY_FIELD.get((section, f.name))
            if section == "zookeeper" and not cfg.namenode.automatic_failover:
                s = None  # ha.zookeeper.* only with automatic failover, as HDFS's files
            if s is None:
                if value is not None:
                    text = str(value).lower() if isinstance(value, bool) else str(value)
                    hdfs[f"qjm.{section}.{f.name}"] = text
                continue
            if value is None:  # unset: its default follows other settings
                continue
            if isinstance(value, bool):
                text = str(value).lower()
            elif isinstance(value, int):
                text = _write_number(value, s.kind)
            elif s.kind == "principal" and realm and "@" not in value:
                text = f"{value}@{realm}"
            else:
                text = str(value)
            target = core if s.key.startswith(("fs.", "hadoop.", "ha.", "ipc.")) else hdfs
            target[s.key] = text
    return core, hdfs


def site_properties(cfg: ClusterConfig) -> tuple[dict[str, str], dict[str, str]]:
    """core-site.xml's and hdfs-site.xml's properties that read back into cfg: every node,
    every setting off its default (by its HDFS key, else qjm.<section>.<field>)."""
    ns = cfg.nameservice
    core: dict[str, str] = {}
    hdfs: dict[str, str] = {"dfs.nameservices": ns}
    if cfg.journalnodes:
        hdfs[SHARED_EDITS] = cfg.shared_edits_uri()
    settings_core, settings_hdfs = settings_properties(cfg)
    core |= settings_core
    hdfs |= settings_hdfs
    hdfs[f"dfs.ha.namenodes.{ns}"] = ",".join(cfg.namenodes)
    for name, nn in cfg.namenodes.items():
        for base, fname in NN_KEYS:
            if getattr(nn, fname):
                hdfs[f"{base}.{ns}.{name}"] = getattr(nn, fname)
        if nn.zkfc_address:
            port = nn.zkfc_address.rpartition(":")[2]
            hdfs[f"{ZKFC_PORT}.{ns}.{name}"] = port
    for i, jn in enumerate(cfg.journalnodes.values(), start=1):  # named by position
        for base, fname in JN_KEYS:
            if getattr(jn, fname):
                hdfs[f"{base}.{ns}.jn{i}"] = getattr(jn, fname)
    hdfs["qjm.datanodes"] = ",".join(cfg.datanodes)
    for name, dn in cfg.datanodes.items():
        for base, fname in DN_KEYS:
            if getattr(dn, fname):
                hdfs[f"{base}.{ns}.{name}"] = getattr(dn, fname)
    for name, proxy in cfg.proxyusers.items():
        for what in ("users", "groups", "hosts"):
            if getattr(proxy, what):
                core[f"hadoop.proxyuser.{name}.{what}"] = getattr(proxy, what)
    return core, hdfs
