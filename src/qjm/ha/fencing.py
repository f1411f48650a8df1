"""Fencing an old active NameNode: HDFS's NodeFencer with `shell(cmd)` and `sshfence`.

The methods come one per line (dfs.ha.fencing.methods); `#` starts a comment. They are
tried in order until one succeeds; fencing fails when none does.

* `shell(cmd args...)` runs `bash -e -c cmd` with the target in the environment
  (target_host, target_port, target_address, target_nameserviceid, target_namenodeid);
  exit 0 means fenced. Unlike HDFS, the command is bounded by a timeout (killed after it).
* `sshfence` / `sshfence(user:port)` runs `fuser -k -n tcp <port>` on the target host over
  ssh with the configured private keys (dfs.ha.fencing.ssh.private-key-files); when that
  fails, nothing listening on the port (`nc -z` fails) also counts as fenced.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import logging
import os
import re
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from qjm.errors import QjmError

log = logging.getLogger(__name__)

DEFAULT_SHELL_TIMEOUT_S = 60.0
DEFAULT_SSH_CONNECT_TIMEOUT_S = 30.0  # dfs.ha.fencing.ssh.connect-timeout
_LINE = re.compile(r"^\s*([A-Za-z0-9_.$]+)\s*(?:\((.*)\))?\s*$")
_SHORT_NAMES = {
    "shell": "shell",
    "org.apache.hadoop.ha.ShellCommandFencer": "shell",
    "sshfence": "sshfence",
    "org.apache.hadoop.ha.SshFenceByTcpPort": "sshfence",
}


class FencingConfigError(QjmError):
    """dfs.ha.fencing.methods could not be parsed; the message names the line."""


@dataclass(frozen=True)
class FenceTarget:
    """The node to fence: its NameNode RPC host and port, nameservice and NameNode id."""

    host: str
    port: int
    nameservice: str = ""
    namenode: str = ""

    @property
    def address(self) -> str:
        """host:port."""
        return f"{self.host}:{self.port}"

    def environment(self, prefix: str = "target") -> dict[str, str]:
        """The variables HDFS's ShellCommandFencer sets for this target."""
        return {
            f"{prefix}_host": self.host,
            f"{prefix}_port": str(self.port),
            f"{prefix}_address": self.address,
            f"{prefix}_nameserviceid": self.nameservice,
            f"{prefix}_namenodeid": self.namenode,
        }


@dataclass(frozen=True)
class FenceMethod:
    """One configured method: kind (shell or sshfence) and its argument."""

    kind: str
    arg: str = ""

    def __str__(self) -> str:
        return f"{self.kind}({self.arg})" if self.arg else self.kind


def parse_methods(text: str) -> list[FenceMethod]:
    """The methods of a dfs.ha.fencing.methods value, in order."""
    methods = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if m is None:
            raise FencingConfigError(
                f"fencing method on line {n} ({line!r}) is not 'name' or 'name(args)'"
            )
        name, arg = m.group(1), (m.group(2) or "").strip()
        kind = _SHORT_NAMES.get(name)
        if kind is None:
            raise FencingConfigError(
                f"fencing method on line {n}: unknown method {name!r} (use shell(cmd) or sshfence)"
            )
        if kind == "shell" and not arg:
            raise FencingConfigError(f"fencing method on line {n}: shell() needs a command")
        if kind == "sshfence" and arg and not re.fullmatch(r"[^:@\s]*(:\d+)?", arg):
            raise FencingConfigError(
                f"fencing method on line {n}: sshfence({arg}) must be sshfence([user][:port])"
            )
        methods.append(FenceMethod(kind, arg))
    return methods


@dataclass
class NodeFencer:
    """Tries the configured methods in order (see the module doc)."""

    methods: list[FenceMethod]
    shell_timeout_s: float = DEFAULT_SHELL_TIMEOUT_S
    ssh_private_key_files: Sequence[str] = ()
    ssh_connect_timeout_s: float = DEFAULT_SSH_CONNECT_TIMEOUT_S
    extra_env: Mapping[str, str] = field(default_factory=dict)
    last_errors: list[str] = field(default_factory=list)

    @classmethod
    def from_config(cls, text: str, **kwargs: object) -> NodeFencer:
        """A fencer for a dfs.ha.fencing.methods value."""
        return cls(parse_methods(text), **kwargs)  # type: ignore[arg-type]

    async def fence(self, target: FenceTarget) -> bool:
        """True when one method fenced target; each failure is in last_errors."""
        self.last_errors = []
        if not self.methods:
            self.last_errors.append("no fencing method configured (dfs.ha.fencing.methods)")
        for method in self.methods:
            try:
                if method.kind == "shell":
                    error = await self._shell(method.arg, target)
                else:
                    error = await self._sshfence(method.arg, target)
            except Exception as e:  # a method that breaks is a method that failed
                error = f"{type(e).__name__}: {e}"
            if error is None:
                log.info("fenced %s with %s", target.address, method)
                return True
            msg = f"{method}: {error}"
            log.warning("fencing %s failed: %s", target.address, msg)
            self.last_errors.append(msg)
        return False

    async def _run(
        self, argv: list[str], env: Mapping[str, str] | None, timeout_s: float
    ) -> tuple[int | None, str]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 5.0)
            return None, ""
        text = out.decode(errors="replace").strip()
        for line in text.splitlines():
            log.info("fence %s: %s", argv[0], line)
        return proc.returncode, text

    async def _shell(self, cmd: str, target: FenceTarget) -> str | None:
        env = {**os.environ, **self.extra_env, **target.environment()}
        code, out = await self._run(["bash", "-e", "-c", cmd], env, self.shell_timeout_s)
        if code is None:
            return f"timed out after {self.shell_timeout_s:g} s"
        if code != 0:
            tail = f": {out.splitlines()[-1]}" if out else ""
            return f"exited {code}{tail}"
        return None

    async def _sshfence(self, arg: str, target: FenceTarget) -> str | None:
        if not self.ssh_private_key_files:
            return "no ssh private key configured (dfs.ha.fencing.ssh.private-key-files)"
        user, _, port = arg.partition(":")
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"]
        argv += ["-o", f"ConnectTimeout={max(1, int(self.ssh_connect_timeout_s))}"]
        for key in self.ssh_private_key_files:
            argv += ["-i", key]
        argv += ["-p", port or "22", f"{user or getpass.getuser()}@{target.host}"]
        argv.append(f"PATH=$PATH:/sbin:/usr/sbin fuser -v -k -n tcp {target.port}")
        code, out = await self._run(argv, None, self.ssh_connect_timeout_s + 30)
        if code == 0:
            return None
        ssh_error = "timed out" if code is None else f"exited {code}: {out[-200:]}"
        code, _ = await self._run(
            ["nc", "-z", target.host, str(target.port)], None, self.ssh_connect_timeout_s
        )
        if code not in (0, None):  # nothing listens there: the old active is gone
            return None
        return f"ssh {target.host} fuser failed ({ssh_error}) and port {target.port} is open"
