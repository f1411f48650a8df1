"""A real MIT Kerberos KDC (Debian's `krb5-kdc`) as a child process on loopback, like MiniKdc.

Everything lives under one directory, never in /etc/krb5kdc or /var/lib/krb5kdc:

    DIR/krb5.conf           for clients (KRB5_CONFIG, -Djava.security.krb5.conf)
    DIR/kdc.conf            for krb5kdc, kdb5_util and kadmin.local (KRB5_KDC_PROFILE)
    DIR/kadm5.acl           the (unused) kadmind ACL the profile names
    DIR/db/                 the principal database and its stash (master key)
    DIR/keytabs/NAME.keytab keytabs add_principal exported (mode 0600)
    DIR/logs/kdc.log        the KDC's log and its output; logs/kadmin.log for the admin tools
    DIR/rcache/             replay caches of servers run with env() (KRB5RCACHEDIR)

The KDC runs in the foreground (`krb5kdc -n`) as our child and listens on host:port for TCP
(clients are told to prefer it: udp_preference_limit = 1) and UDP. Principals are added
with kadmin.local, which edits the database directly; no kadmind runs.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from qjm.cluster.process import log_tail, wait_or_kill
from qjm.errors import QjmError

INSTALL_HINT = (
    "install it with `apt-get install krb5-kdc krb5-admin-server krb5-user` (or `make install`)"
)
PACKAGES = {"krb5kdc": "krb5-kdc", "kdb5_util": "krb5-kdc", "kadmin.local": "krb5-admin-server"}
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")  # not on a non-root user's PATH
AUTO_PORT_RANGE = (20000, 32000)  # below the kernel's ephemeral range: restarts find them free
PORT_TRIES = 200  # random picks before giving up on finding a port free for TCP and UDP
START_TRIES = 3  # launches on a fresh auto-picked port when another process took the last one
TOOL_TIMEOUT = 30.0  # seconds for one kdb5_util, kadmin.local, kinit or klist run
ENCTYPES = "aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal"
# A principal name as kadmin.local's -q parser takes it unquoted: components split by /,
# an optional @REALM.
NAME_RE = re.compile(r"[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*(@[A-Za-z0-9._-]+)?")
# What kadmin.local writes to stderr on success; every other stderr line is the failure.
KADMIN_NOISE = ("No policy specified for",)
READY_LINE = b"commencing operation"  # krb5kdc logs it once its sockets listen (C locale)


class KdcError(QjmError):
    """The KDC could not be found, started or stopped, or a Kerberos tool failed."""


def _tool(name: str) -> str:
    """The path of a Kerberos program: on PATH or in an sbin directory."""
    path = os.pathsep.join([os.environ.get("PATH", ""), *SBIN_DIRS])
    found = shutil.which(name, path=path)
    if found is None:
        package = PACKAGES.get(name, "krb5-user")
        raise KdcError(
            f"Kerberos program {name} not found (Debian package {package}); {INSTALL_HINT}"
        )
    return found


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _bindable(host: str, port: int, kind: socket.SocketKind) -> bool:
    with socket.socket(_family(host), kind) as s:
        if kind == socket.SOCK_STREAM:  # as the KDC binds: TIME_WAIT connections are no user
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_free(host: str, port: int) -> bool:
    """True when host:port is free for both TCP and UDP."""
    return _bindable(host, port, socket.SOCK_STREAM) and _bindable(host, port, socket.SOCK_DGRAM)


def free_port(host: str) -> int:
    """A random port on host free for both TCP and UDP, from below the ephemeral range."""
    low, high = AUTO_PORT_RANGE
    rng = random.Random()
    for _ in range(PORT_TRIES):
        port = rng.randrange(low, high)
        if port_free(host, port):
            return port
    raise KdcError(f"no port free for both TCP and UDP on {host} between {low} and {high}")


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


class Kdc:
    """A KDC for one realm under directory; start() runs it, stop() ends it (also `with`)."""

    def __init__(
        self,
        directory: Path,
        realm: str = "QJM.TEST",
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        ready_timeout: float = 10.0,
    ) -> None:
        if not re.fullmatch(r"[A-Z0-9._-]+", realm):
            raise KdcError(f"Kerberos realm {realm!r}: use upper-case letters, digits, . _ -")
        if not 0 <= port <= 65535:
            raise KdcError(f"KDC port {port}: ports run from 1 to 65535 (0 picks a free one)")
        self.directory = directory.resolve()
        self.realm = realm
        self.host = host
        self.port = port
        self.ready_timeout = ready_timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._log_start = 0
        self.krb5_conf = self.directory / "krb5.conf"
        self.kdc_conf = self.directory / "kdc.conf"
        self.acl_file = self.directory / "kadm5.acl"
        self.database = self.directory / "db" / "principal"
        self.stash = self.directory / "db" / "stash"
        self.keytab_dir = self.directory / "keytabs"
        self.rcache_dir = self.directory / "rcache"
        self.log = self.directory / "logs" / "kdc.log"
        self.admin_log = self.directory / "logs" / "kadmin.log"

    @property
    def address(self) -> str:
        """host:port the KDC listens on (TCP and UDP); port 0 until the first start()."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The KDC's process id while it runs, else None."""
        if self.process is None or self.process.poll() is not None:
            return None
        return self.process.pid

    def principal(self, name: str) -> str:
        """name qualified with @REALM (alice -> alice@REALM); checked for kadmin's parser."""
        if not NAME_RE.fullmatch(name):
            raise KdcError(
                f"Kerberos principal {name!r}: use letters, digits and . _ + - in components "
                "joined by /, optionally followed by @REALM"
            )
        if "@" not in name:
            return f"{name}@{self.realm}"
        if not name.endswith(f"@{self.realm}"):
            raise KdcError(f"Kerberos principal {name}: this KDC serves realm {self.realm} only")
        return name

    def env(self) -> dict[str, str]:
        """The variables a Kerberos client (or server) process needs, to merge into its env."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5RCACHEDIR": str(self.rcache_dir)}

    def java_options(self) -> list[str]:
        """JVM options that point Java's Kerberos at this KDC."""
        return [
            f"-Djava.security.krb5.conf={self.krb5_conf}",
            "-Dsun.security.krb5.disableReferrals=true",
        ]

    def start(self) -> None:
        """Create the files and database (first time only), run the KDC, wait until it answers."""
        if self.pid is not None:
            return
        tools = {name: _tool(name) for name in ("krb5kdc", "kdb5_util", "kadmin.local")}
        for d in (self.directory, self.keytab_dir, self.rcache_dir, self.log.parent):
            d.mkdir(parents=True, exist_ok=True)
        self.database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        picked = self.port == 0  # a restart keeps the port its clients' krb5.conf names
        if picked:
            self.port = free_port(self.host)
        elif not port_free(self.host, self.port):
            raise KdcError(
                f"cannot start the KDC: port {self.port} on {self.host} is taken by another "
                "process (TCP or UDP)"
            )
        self._write_configs()
        if not self.stash.exists():
            self._create_database(tools["kdb5_util"])
        try:
            for attempt in range(1, START_TRIES + 1):
                self._launch(tools["krb5kdc"])
                if self._wait_ready(retry_port=picked and attempt < START_TRIES):
                    return
                self.port = free_port(self.host)  # another process took the picked port
                self._write_configs()
        except BaseException:  # a failed start or an interrupt leaves nothing running
            self.stop()
            raise

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the KDC, SIGKILL it after timeout; nothing when it does not run."""
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        if not wait_or_kill(proc, timeout):
            raise KdcError(f"the KDC (pid {proc.pid}) did not exit after SIGKILL")
        self.process = None

    def add_principal(self, name: str, keytab: Path | None = None) -> Path:
        """Add name with a random key and export it to keytab (default DIR/keytabs/NAME.keytab)."""
        principal = self.principal(name)
        if keytab is None:
            bare = principal.removesuffix(f"@{self.realm}")
            keytab = self.keytab_dir / f"{bare.replace('/', '_').replace('@', '_')}.keytab"
        keytab = keytab.resolve()
        self._kadmin(f"addprinc -randkey {principal}", f'Principal "{principal}" created.')
        return self.export_keytab(name, keytab)

    def export_keytab(self, name: str, keytab: Path) -> Path:
        """Add an existing principal's key to keytab (appending to one that exists)."""
        principal = self.principal(name)
        keytab = keytab.resolve()
        keytab.parent.mkdir(parents=True, exist_ok=True)
        # -norandkey keeps the key addprinc made: exporting the principal again (to another
        # keytab) leaves the keytabs made before valid. ktadd appends to an existing keytab.
        self._kadmin(f"ktadd -norandkey -k {keytab} {principal}", "added to keytab")
        keytab.chmod(0o600)
        return keytab

    def add_password_principal(self, name: str, password: str) -> str:
        """Add name with a password; return the qualified principal."""
        principal = self.principal(name)
        if not password or "\n" in password or "\r" in password:
            raise KdcError(f"password for {principal}: give a non-empty password on one line")
        # The password goes through kadmin.local's prompt on stdin, never its command line.
        self._kadmin(
            f"addprinc {principal}", f'Principal "{principal}" created.', stdin=f"{password}\n" * 2
        )
        return principal

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> None:
        """Get principal's TGT with its keytab into the file ccache."""
        qualified = self.principal(principal)
        argv = [_tool("kinit"), "-kt", str(keytab), "-c", f"FILE:{ccache}", qualified]
        self._run(argv, shown=f"kinit -kt {keytab} -c FILE:{ccache} {qualified}")

    def kinit_password(self, principal: str, password: str, ccache: Path) -> None:
        """Get principal's TGT with its password (given on kinit's stdin) into the file ccache."""
        qualified = self.principal(principal)
        argv = [_tool("kinit"), "-c", f"FILE:{ccache}", qualified]
        self._run(argv, shown=f"kinit -c FILE:{ccache} {qualified}", stdin=f"{password}\n")

    def klist_ok(self, ccache: Path) -> bool:
        """True when the file ccache holds an unexpired ticket (`klist -s`)."""
        argv = [_tool("klist"), "-s", "-c", f"FILE:{ccache}"]
        try:
            done = subprocess.run(
                argv, env=self._tool_env(), capture_output=True, timeout=TOOL_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            shown = f"klist -s -c FILE:{ccache}"
            raise KdcError(f"{shown} did not finish in {TOOL_TIMEOUT:.0f} s") from None
        return done.returncode == 0

    def __enter__(self) -> Kdc:
        """Start the KDC; leaving the block stops it."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the KDC."""
        self.stop()

    def _tool_env(self) -> dict[str, str]:
        # C locale: kadmin.local's messages, which _kadmin reads, are translated otherwise.
        env = {**os.environ, **self.env(), "KRB5_KDC_PROFILE": str(self.kdc_conf), "LC_ALL": "C"}
        env.pop("LANGUAGE", None)
        return env

    def _run(self, argv: list[str], shown: str, stdin: str | None = None) -> tuple[str, str]:
        """Run a Kerberos tool with our profile: its stdout and stderr, or KdcError with them."""
        try:
            done = subprocess.run(
                argv,
                input=(stdin or "").encode(),
                env=self._tool_env(),
                capture_output=True,
                timeout=TOOL_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            raise KdcError(f"{shown} did not finish in {TOOL_TIMEOUT:.0f} s") from None
        stdout = done.stdout.decode(errors="replace")
        stderr = done.stderr.decode(errors="replace")
        if done.returncode != 0:
            reason = _one_line(stderr) or _one_line(stdout) or "no output"
            raise KdcError(f"{shown} failed with exit code {done.returncode}: {reason}")
        return stdout, stderr

    def _kadmin(self, query: str, expect: str, stdin: str | None = None) -> None:
        """Run one kadmin.local query; KdcError unless its output has expect.

        kadmin.local -q exits 0 even when the query fails, so success is read from its output.
        """
        if not self.stash.exists():
            raise KdcError(f"the KDC database in {self.directory} does not exist yet: start() it")
        argv = [_tool("kadmin.local"), "-r", self.realm, "-q", query]
        shown = f"kadmin.local -q {query!r}"
        stdout, stderr = self._run(argv, shown, stdin)
        if expect not in stdout:
            errors = [
                line.strip()
                for line in stderr.splitlines()
                if line.strip() and not line.startswith(KADMIN_NOISE)
            ]
            raise KdcError(f"{shown} failed: {'; '.join(errors) or _one_line(stdout)}")

    def _create_database(self, kdb5_util: str) -> None:
        password = secrets.token_urlsafe(24)  # the stash file holds it; nobody types it
        argv = [kdb5_util, "create", "-s", "-r", self.realm, "-P", password]
        self._run(argv, shown=f"kdb5_util create -s -r {self.realm} -P (random)")

    def _write_configs(self) -> None:
        self.krb5_conf.write_text(self._krb5_conf_text())
        self.kdc_conf.write_text(self._kdc_conf_text())
        if not self.acl_file.exists():
            self.acl_file.write_text(f"*/admin@{self.realm} *\n")

    def _krb5_conf_text(self) -> str:
        r = self.realm
        return (
            "[libdefaults]\n"
            f"    default_realm = {r}\n"
            "    udp_preference_limit = 1\n"  # TCP first, for Java's and MIT's clients alike
            "    dns_lookup_kdc = false\n"
            "    dns_lookup_realm = false\n"
            "    rdns = false\n"
            "    dns_canonicalize_hostname = false\n"
            "    ignore_acceptor_hostname = false\n"
            "    forwardable = true\n"
            "    ticket_lifetime = 24h\n"
            "    renew_lifetime = 7d\n"
            "\n[realms]\n"
            f"    {r} = {{\n"
            f"        kdc = {self.address}\n"
            "    }\n"
            "\n[domain_realm]\n"
            f"    localhost = {r}\n"
            f"    .localhost = {r}\n"
        )

    def _kdc_conf_text(self) -> str:
        # kdc_listen / kdc_tcp_listen bind host only; the *_ports forms alone would bind every
        # address. Both are in [kdcdefaults] too, so the KDC never falls back to ports 88/750.
        ports = (
            f"kdc_ports = {self.port}\n"
            f"kdc_tcp_ports = {self.port}\n"
            f"kdc_listen = {self.address}\n"
            f"kdc_tcp_listen = {self.address}\n"
        )
        realm_ports = "".join(f"        {line}\n" for line in ports.splitlines())
        return (
            "[kdcdefaults]\n"
            + "".join(f"    {line}\n" for line in ports.splitlines())
            + "\n[realms]\n"
            f"    {self.realm} = {{\n"
            f"        database_name = {self.database}\n"
            f"        key_stash_file = {self.stash}\n"
            f"        acl_file = {self.acl_file}\n" + realm_ports + "        max_life = 24h 0m 0s\n"
            "        max_renewable_life = 7d 0h 0m 0s\n"
            f"        supported_enctypes = {ENCTYPES}\n"
            "    }\n"
            "\n[logging]\n"
            f"    kdc = FILE:{self.log}\n"
            f"    admin_server = FILE:{self.admin_log}\n"
            f"    default = FILE:{self.admin_log}\n"
        )

    def _launch(self, krb5kdc: str) -> None:
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:  # the KDC's [logging] appends to the same file
            self.process = subprocess.Popen(
                [krb5kdc, "-n", "-r", self.realm],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
                env=self._tool_env(),
                start_new_session=True,
            )

    def _launch_log(self) -> bytes:
        """What the KDC logged since the last launch."""
        try:
            with open(self.log, "rb") as f:
                f.seek(self._log_start)
                return f.read()
        except OSError:
            return b""

    def _wait_ready(self, *, retry_port: bool) -> bool:
        """Poll until the KDC logged that it serves and a TCP connect to it succeeds: True;
        False when it exited because its port was taken and retry_port; KdcError otherwise.

        The connect alone is no proof: another process may listen on the port the KDC failed
        to bind. Its log says "commencing operation" once its sockets listen.
        """
        proc = self.process
        assert proc is not None
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if proc.poll() is not None:
                self.process = None
                if retry_port and b"Address already in use" in self._launch_log():
                    return False
                raise KdcError(
                    f"the KDC for {self.realm} on {self.address} exited with code "
                    f"{proc.returncode} before it served; the end of {self.log}:\n"
                    f"{log_tail(self.log)}"
                )
            if READY_LINE in self._launch_log():
                try:
                    with socket.create_connection((self.host, self.port), timeout=0.5):
                        return True
                except OSError:
                    pass
            if time.monotonic() > deadline:
                raise KdcError(
                    f"the KDC for {self.realm} did not serve on {self.address} (TCP) within "
                    f"{self.ready_timeout:.0f} s; the end of {self.log}:\n{log_tail(self.log)}"
                )
            time.sleep(0.02)
