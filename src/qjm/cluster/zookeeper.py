"""The real ZooKeeper server (Debian's `zookeeper` package) as child processes on loopback.

Each member gets a generated config (DIR/conf/zkN.cfg), a data directory with its myid
(DIR/data/zkN) and a log (DIR/logs/zkN.log). One member runs standalone; several run as an
ensemble. Ports: the client ports first (one per member), then the quorum ports, then the
leader-election ports, consecutive from base_port.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from qjm.cluster.process import log_tail, wait_or_kill
from qjm.errors import QjmError

HOST = "127.0.0.1"
MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Debian's layout: /etc/zookeeper/conf is on its CLASSPATH; zookeeper.jar names its own
# dependencies in its manifest. slf4j-simple (a dependency of libzookeeper-java) sends the
# server's log to stderr, which goes to the member's log file; without it the log is empty.
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
CONF_DIR = Path("/etc/zookeeper/conf")
SLF4J_SIMPLE_JAR = Path("/usr/share/java/slf4j-simple.jar")
INSTALL_HINT = "install it with `apt-get install zookeeper` (or `make install`)"
DEFAULT_JVM_OPTIONS: tuple[str, ...] = ("-Xms64m", "-Xmx512m")
DEFAULT_TICK_MS = 500  # sessions from 2 ticks (1 s) up; elections and syncs in ticks
MAX_SESSION_TIMEOUT_MS = 60_000  # HDFS's ZKFC asks for 10 s (ha.zookeeper.session-timeout.ms)
FOUR_LETTER_WORDS = "srvr,ruok,stat,mntr,conf,cons"
SERVING_MODES = ("standalone", "leader", "follower")
AUTO_PORT_RANGE = (20000, 32000)  # below the kernel's ephemeral range: restarts find them free


class ZooKeeperError(QjmError):
    """ZooKeeper could not be found, started, or stopped as asked."""


SASL_PROVIDER = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"


@dataclass(frozen=True)
class ZooKeeperKerberos:
    """ZooKeeper's own Kerberos (design §S.11): the server's principal, its keytab and the
    krb5.conf of the KDC that made them."""

    principal: str  # zookeeper/<host>@REALM
    keytab: Path
    krb5_conf: Path


def jaas_text(kerberos: ZooKeeperKerberos) -> str:
    """The JAAS file's `Server` section: ZooKeeper accepts SASL/GSSAPI with its keytab."""
    return (
        "Server {\n"
        "  com.sun.security.auth.module.Krb5LoginModule required\n"
        "  useKeyTab=true\n"
        f'  keyTab="{kerberos.keytab}"\n'
        "  storeKey=true\n"
        "  useTicketCache=false\n"
        f'  principal="{kerberos.principal}";\n'
        "};\n"
    )


def sasl_settings() -> dict[str, str]:
    """zoo.cfg keys of a Kerberos ZooKeeper: the SASL provider, SASL ids that are the
    principal's first component (nn/host@REALM authenticates as `nn`, as HDFS's
    `sasl:nn:rwcda` expects), and no request served to a session that did not authenticate
    with SASL (design §S.11)."""
    return {
        "authProvider.1": SASL_PROVIDER,
        "kerberos.removeHostFromPrincipal": "true",
        "kerberos.removeRealmFromPrincipal": "true",
        "enforce.auth.enabled": "true",
        "enforce.auth.schemes": "sasl",
    }


def sasl_jvm_options(jaas: Path, kerberos: ZooKeeperKerberos) -> list[str]:
    """The JVM flags that point the server at its JAAS file and at the KDC."""
    return [
        f"-Djava.security.auth.login.config={jaas}",
        f"-Djava.security.krb5.conf={kerberos.krb5_conf}",
        "-Dsun.security.krb5.disableReferrals=true",
    ]


@dataclass
class ZooKeeperMember:
    """One ZooKeeper server: its id, ports, files and (while running) its process."""

    myid: int
    client_port: int
    quorum_port: int | None
    election_port: int | None
    config: Path
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """zk<myid>."""
        return f"zk{self.myid}"

    @property
    def address(self) -> str:
        """host:port clients connect to."""
        return f"{HOST}:{self.client_port}"

    @property
    def pid(self) -> int | None:
        """The process id while it runs, else None."""
        if self.process is None or self.process.poll() is not None:
            return None
        return self.process.pid

    def ports(self) -> list[int]:
        """Every port this member listens on."""
        return [p for p in (self.client_port, self.quorum_port, self.election_port) if p]


def four_letter_word(address: str, word: str, timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter command to host:port and return its answer."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def server_mode(address: str, timeout: float = 2.0) -> str:
    """standalone, leader or follower when the server at host:port serves, else ''."""
    try:
        answer = four_letter_word(address, "srvr", timeout)
    except OSError:
        return ""
    for line in answer.splitlines():
        if line.startswith("Mode:"):
            return line.split(":", 1)[1].strip()
    return ""


def find_java(java: str | None = None) -> str:
    """The java executable: the one given, $JAVA_HOME/bin/java, or java on PATH."""
    if java is not None:
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            raise ZooKeeperError(f"ZooKeeper needs Java, but {java} is not an executable file")
        return java
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if found is None:
        raise ZooKeeperError(
            "ZooKeeper needs Java, but no `java` is on PATH (nor in $JAVA_HOME); install it "
            "with `apt-get install default-jre-headless` (or `make install`)"
        )
    return found


def zookeeper_classpath() -> str:
    """The Java class path that runs Debian's ZooKeeper server."""
    if not ZOOKEEPER_JAR.is_file():
        raise ZooKeeperError(
            f"ZooKeeper is not installed ({ZOOKEEPER_JAR} is missing); {INSTALL_HINT}"
        )
    parts = [str(CONF_DIR), str(ZOOKEEPER_JAR)]
    if SLF4J_SIMPLE_JAR.is_file():
        parts.append(str(SLF4J_SIMPLE_JAR))
    return ":".join(parts)


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((HOST, port))
        except OSError:
            return False
    return True


def _free_block(n: int) -> int:
    low, high = AUTO_PORT_RANGE
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(low, high - n)
        if all(_bindable(p) for p in range(base, base + n)):
            return base
    raise ZooKeeperError(f"no {n} consecutive free ports on {HOST} between {low} and {high}")


class ZooKeeperEnsemble:
    """ZooKeeper members started by this process; stop() ends them (also as a context manager)."""

    def __init__(
        self,
        directory: Path,
        members: list[ZooKeeperMember],
        argv_prefix: list[str],
        ready_timeout: float,
    ) -> None:
        self.directory = directory
        self.members = members
        self._argv_prefix = argv_prefix
        self.ready_timeout = ready_timeout

    @property
    def connect_string(self) -> str:
        """host:port,host:port,... of every member, for kazoo and HDFS's ha.zookeeper.quorum."""
        return ",".join(m.address for m in self.members)

    @property
    def pids(self) -> list[int]:
        """The pids of the members running now."""
        return [p for m in self.members if (p := m.pid) is not None]

    @property
    def standalone(self) -> bool:
        """True for a single server."""
        return len(self.members) == 1

    def member(self, myid: int) -> ZooKeeperMember:
        """The member with this id (1, 2, ...)."""
        for m in self.members:
            if m.myid == myid:
                return m
        ids = ", ".join(str(m.myid) for m in self.members)
        raise ZooKeeperError(f"no ZooKeeper member {myid} (the members are {ids})")

    def describe(self) -> dict[str, dict[str, Any]]:
        """Per member (zk1, ...): pid (None when stopped), client address, config, data and log."""
        return {
            m.name: {
                "pid": m.pid,
                "client": m.address,
                "config": str(m.config),
                "data": str(m.data_dir),
                "log": str(m.log),
            }
            for m in self.members
        }

    def modes(self) -> dict[int, str]:
        """Each running member's mode (standalone, leader, follower, or '' if not serving)."""
        return {m.myid: server_mode(m.address, 1.0) for m in self.members if m.pid is not None}

    def leader(self) -> int | None:
        """The id of the member that is leader (or the standalone server), if any."""
        for myid, mode in self.modes().items():
            if mode in ("leader", "standalone"):
                return myid
        return None

    def start(self) -> None:
        """Start every member that is not running and wait until the ensemble serves."""
        stopped = [m for m in self.members if m.pid is None]
        for m in stopped:
            self._check_ports(m)
        for m in stopped:
            self._launch(m)
        self.wait_serving()

    def start_member(self, myid: int) -> None:
        """Start one stopped member and wait until it serves again."""
        m = self.member(myid)
        if m.pid is None:
            self._launch(m)
        self.wait_serving()

    def stop_member(self, myid: int, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop one member: SIGTERM (SIGKILL when kill), then SIGKILL after timeout."""
        self._stop(self.member(myid), kill=kill, timeout=timeout)

    def restart(self, myid: int, *, kill: bool = False, timeout: float = 10.0) -> None:
        """Stop one member and start it again on the same ports and data; wait until it serves."""
        self.stop_member(myid, kill=kill, timeout=timeout)
        self.start_member(myid)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM every member, SIGKILL those still running after timeout."""
        running = [m for m in self.members if m.process is not None]
        for m in running:
            if m.process is not None and m.process.poll() is None:
                m.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for m in running:
            self._wait_or_kill(m, deadline)

    def wait_serving(self, timeout: float | None = None) -> None:
        """Wait until every running member serves (one of them leading); raise after timeout."""
        limit = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            for m in self.members:
                if m.process is not None and m.process.poll() is not None:
                    code = m.process.returncode
                    m.process = None
                    raise ZooKeeperError(
                        f"ZooKeeper {m.name} (client port {m.client_port}) exited with code "
                        f"{code} before it served; the end of {m.log}:\n{log_tail(m.log)}"
                    )
            modes = self.modes()
            if self._serving(modes):
                return
            if time.monotonic() > deadline:
                shown = ", ".join(f"zk{i}: {mode or 'not serving'}" for i, mode in modes.items())
                tails = "".join(
                    f"\n--- the end of {m.log}:\n{log_tail(m.log, 8)}"
                    for m in self.members
                    if m.myid in modes and modes[m.myid] not in SERVING_MODES
                )
                raise ZooKeeperError(
                    f"ZooKeeper not serving after {limit:.0f} s ({shown or 'no member running'})"
                    f"{tails}"
                )
            time.sleep(0.05)

    def _serving(self, modes: dict[int, str]) -> bool:
        if not modes or any(mode not in SERVING_MODES for mode in modes.values()):
            return False
        if self.standalone:
            return True
        return list(modes.values()).count("leader") == 1

    @staticmethod
    def _check_ports(m: ZooKeeperMember) -> None:
        busy = [p for p in m.ports() if not _bindable(p)]
        if busy:
            raise ZooKeeperError(
                f"cannot start ZooKeeper {m.name}: port {', '.join(map(str, busy))} on {HOST} "
                "is taken by another process"
            )

    def _launch(self, m: ZooKeeperMember) -> None:
        self._check_ports(m)
        m.log.parent.mkdir(parents=True, exist_ok=True)
        with open(m.log, "ab") as out:
            m.process = subprocess.Popen(
                [*self._argv_prefix, str(m.config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=m.data_dir,
                start_new_session=True,
            )

    def _stop(self, m: ZooKeeperMember, *, kill: bool, timeout: float) -> None:
        if m.process is None:
            return
        if m.process.poll() is None:
            m.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self._wait_or_kill(m, time.monotonic() + timeout)

    @staticmethod
    def _wait_or_kill(m: ZooKeeperMember, deadline: float) -> None:
        proc = m.process
        if proc is None:
            return
        if not wait_or_kill(proc, max(0.0, deadline - time.monotonic())):
            raise ZooKeeperError(f"ZooKeeper {m.name} (pid {proc.pid}) did not exit after SIGKILL")
        m.process = None

    def __enter__(self) -> ZooKeeperEnsemble:
        """The ensemble itself; leaving the block stops it."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop every member."""
        self.stop()


def _config_text(
    m: ZooKeeperMember, servers: list[ZooKeeperMember], tick_ms: int, extra: dict[str, str]
) -> str:
    settings = {
        "tickTime": str(tick_ms),
        "initLimit": "20",
        "syncLimit": "10",
        "dataDir": str(m.data_dir),
        "clientPort": str(m.client_port),
        "clientPortAddress": HOST,
        "maxSessionTimeout": str(MAX_SESSION_TIMEOUT_MS),
        "admin.enableServer": "false",
        "4lw.commands.whitelist": FOUR_LETTER_WORDS,
        "maxClientCnxns": "0",
        "autopurge.purgeInterval": "0",
        **extra,
    }
    lines = [f"{k}={v}" for k, v in settings.items()]
    if len(servers) > 1:
        lines += [f"server.{s.myid}={HOST}:{s.quorum_port}:{s.election_port}" for s in servers]
    return "\n".join(lines) + "\n"


def start_zookeeper(
    directory: Path,
    members: int = 1,
    base_port: int | None = None,
    *,
    java: str | None = None,
    jvm_options: Sequence[str] = DEFAULT_JVM_OPTIONS,
    tick_ms: int = DEFAULT_TICK_MS,
    settings: dict[str, str] | None = None,
    ready_timeout: float = 30.0,
    kerberos: ZooKeeperKerberos | None = None,
) -> ZooKeeperEnsemble:
    """Start a standalone ZooKeeper (or an ensemble of members) under directory; return once
    it serves. With kerberos, clients may log in with SASL/GSSAPI (design §S.11)."""
    if members < 1 or (members > 1 and members % 2 == 0):
        raise ZooKeeperError(
            f"ZooKeeper with {members} members: run 1 (standalone) or an odd number (3, 5)"
        )
    needed = 1 if members == 1 else 3 * members
    if base_port is not None and not 1 <= base_port <= 65536 - needed:
        raise ZooKeeperError(
            f"ZooKeeper base port {base_port}: {members} member(s) need ports {base_port}-"
            f"{base_port + needed - 1}, but ports run from 1 to 65535"
        )
    directory = directory.resolve()
    extra = dict(settings or {})
    sasl_options: list[str] = []
    if kerberos is not None:
        jaas = directory / "conf" / "jaas.conf"
        jaas.parent.mkdir(parents=True, exist_ok=True)
        jaas.write_text(jaas_text(kerberos))
        extra = {**sasl_settings(), **extra}
        sasl_options = sasl_jvm_options(jaas, kerberos)
    argv_prefix = [
        find_java(java),
        *jvm_options,
        *sasl_options,
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
        "-cp",
        zookeeper_classpath(),
        MAIN,
    ]
    base = _free_block(needed) if base_port is None else base_port
    ms = []
    for i in range(members):
        name = f"zk{i + 1}"
        ms.append(
            ZooKeeperMember(
                myid=i + 1,
                client_port=base + i,
                quorum_port=base + members + i if members > 1 else None,
                election_port=base + 2 * members + i if members > 1 else None,
                config=directory / "conf" / f"{name}.cfg",
                data_dir=directory / "data" / name,
                log=directory / "logs" / f"{name}.log",
            )
        )
    for m in ms:
        m.data_dir.mkdir(parents=True, exist_ok=True)
        (m.data_dir / "myid").write_text(f"{m.myid}\n")
        m.config.parent.mkdir(parents=True, exist_ok=True)
        m.config.write_text(_config_text(m, ms, tick_ms, extra))
    ensemble = ZooKeeperEnsemble(directory, ms, argv_prefix, ready_timeout)
    try:
        ensemble.start()
    except BaseException:  # a failed start or an interrupt leaves nothing running
        ensemble.stop()
        raise
    return ensemble
