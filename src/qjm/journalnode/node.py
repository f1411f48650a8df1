"""The JournalNode daemon: journals by id, each on its own thread, behind gRPC and HTTP."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import grpc
from aiohttp import web

from qjm import __version__
from qjm.config import JournalNodeSettings, format_address
from qjm.errors import QjmError
from qjm.journalnode.journal import FaultInjector, Journal
from qjm.journalnode.metrics import JournalNodeMetrics
from qjm.journalnode.storage import JNStorage, check_journal_id, lock_file
from qjm.journalnode.syncer import JournalSyncer
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import JournalNotFormattedError, StorageError

log = logging.getLogger("qjm.journalnode")
T = TypeVar("T")
NODE_LOCK = "in_use.lock"
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.so_reuseport", 0),
]


class StartupError(QjmError):
    """The JournalNode cannot start: bad edits dir, busy port, locked storage."""


@dataclass
class _Open:
    journal: Journal
    executor: ThreadPoolExecutor


def check_edits_dir(path: str | Path) -> Path:
    """Validate (and create) the edits dir, naming the problem."""
    p = Path(path)
    if not p.is_absolute():
        raise StartupError(f"edits dir {str(p)!r} is not an absolute path")
    if p.exists() and not p.is_dir():
        raise StartupError(f"edits dir {p} is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StartupError(f"cannot create edits dir {p}: {e.strerror}") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise StartupError(f"edits dir {p} is not writable")
    return p


class Progress:
    """Wakes long polls of one journal when it has new edits or a new committed txid."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def current(self) -> asyncio.Event:
        """The event the next notify sets; take it before checking the condition."""
        return self._event

    def notify(self) -> None:
        """Wake every waiter and arm a fresh event."""
        self._event.set()
        self._event = asyncio.Event()


def _check_bindable(host: str, port: int, what: str) -> None:
    """Fail with one clear line when host:port cannot be listened on."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            where = format_address(host, port)
            raise StartupError(f"cannot listen for {what} on {where}: {e.strerror or e}") from None


class JournalNode:
    """Holds the journals of one edits dir and serves them over gRPC and HTTP."""

    def __init__(
        self,
        edits_dir: str | Path,
        rpc_address: tuple[str, int],
        http_address: tuple[str, int],
        settings: JournalNodeSettings | None = None,
        faults: FaultInjector | None = None,
        peers: list[str] | None = None,
    ) -> None:
        self.edits_dir = Path(edits_dir)
        self.node_id = uuid.uuid4().hex  # per process: one node named twice in a URI shows
        self.rpc_host, self.rpc_port = rpc_address
        self.http_host, self.http_port = http_address
        self.settings = settings or JournalNodeSettings()
        self.faults = faults
        self._journals: dict[str, _Open] = {}
        self.progress: dict[str, Progress] = {}
        self._open_lock = asyncio.Lock()
        self.metrics = JournalNodeMetrics(
            self.journals, lambda: self.syncer is not None and self.syncer.running
        )
        self._lock_fd = -1
        self._grpc: grpc.aio.Server | None = None
        self._http: web.AppRunner | None = None
        self.stopped = asyncio.Event()
        self.peers = list(peers or [])
        self.syncer: JournalSyncer | None = None
        self._sync_stop = asyncio.Event()
        self._sync_task: asyncio.Task[None] | None = None

    # -- journals ------------------------------------------------------------------------------
    def journals(self) -> list[Journal]:
        """The journals open now."""
        return [o.journal for o in list(self._journals.values())]

    async def _get(self, jid: str, create: bool) -> _Open:
        check_journal_id(jid)
        found = self._journals.get(jid)
        if found is not None:
            return found
        async with self._open_lock:
            found = self._journals.get(jid)
            if found is not None:
                return found
            root = self.edits_dir / jid
            if not create and not root.is_dir():
                raise JournalNotFormattedError(
                    f"journal {jid!r} is not formatted on this JournalNode (no storage at "
                    f"{root}); run `qjm journal format`"
                )
            executor = ThreadPoolExecutor(1, thread_name_prefix=f"journal-{jid}")
            loop = asyncio.get_running_loop()
            try:
                journal = await loop.run_in_executor(
                    executor,
                    lambda: Journal(
                        jid,
                        JNStorage(root),
                        faults=self.faults,
                        cache_bytes=self.settings.edit_cache_size_bytes,
                    ),
                )
            except BaseException:
                executor.shutdown(wait=False)
                raise
            self.metrics.attach(journal)
            progress = Progress()

            def wake(progress: Progress = progress) -> None:
                loop.call_soon_threadsafe(progress.notify)

            journal.on_progress = wake
            self.progress[jid] = progress
            opened = _Open(journal, executor)
            self._journals[jid] = opened
            return opened

    async def run(self, jid: str, fn: Callable[[Journal], T], *, create: bool = False) -> T:
        """Run fn(journal) on that journal's thread."""
        opened = await self._get(jid, create)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(opened.executor, fn, opened.journal)

    async def journal(self, jid: str) -> Journal:
        """The open journal jid (opened if its storage exists); for thread-safe calls only."""
        return (await self._get(jid, create=False)).journal

    async def is_formatted(self, jid: str) -> bool:
        """True when jid has formatted storage here; creates nothing."""
        check_journal_id(jid)
        if jid not in self._journals and not (self.edits_dir / jid / "current").is_dir():
            return False
        return await self.run(jid, lambda j: j.is_formatted())

    async def node_status(self) -> pb.NodeStatus:
        """Status of the node and every journal in its edits dir."""
        st = pb.NodeStatus(
            rpc_address=format_address(self.rpc_host, self.rpc_port),
            http_address=format_address(self.http_host, self.http_port),
            version=__version__,
            node_id=self.node_id,
        )
        for jid in self._journal_dirs():
            st.journals.append(await self.run(jid, lambda j: j.status()))
        return st

    def _journal_dirs(self) -> list[str]:
        names = set(self._journals)
        for entry in self.edits_dir.iterdir():
            if entry.is_dir() and (entry / "current").is_dir():
                try:
                    names.add(check_journal_id(entry.name))
                except QjmError:
                    log.warning("ignoring %s: not a valid journal id", entry)
        return sorted(names)

    def http_url(self) -> str:
        """Base URL of the HTTP server, for from_url and links."""
        host = self.http_host if self.http_host not in ("0.0.0.0", "::") else "127.0.0.1"
        return f"http://{format_address(host, self.http_port)}"

    # -- lifecycle -----------------------------------------------------------------------------
    def _lock_node(self) -> None:
        try:
            self._lock_fd = lock_file(
                self.edits_dir / NODE_LOCK,
                f"edits dir {self.edits_dir} is in use by another JournalNode",
            )
        except StorageError as e:
            raise StartupError(str(e)) from None

    async def start(self) -> None:
        """Check storage, open the existing journals, start both servers."""
        from qjm.journalnode.http import make_app
        from qjm.journalnode.rpc import JournalNodeService, register_service

        check_edits_dir(self.edits_dir)
        self._lock_node()
        try:
            for jid in self._journal_dirs():
                await self._get(jid, create=False)
            _check_bindable(self.rpc_host, self.rpc_port, "RPC")
            _check_bindable(self.http_host, self.http_port, "HTTP")
            server = grpc.aio.server(options=GRPC_OPTIONS)
            register_service(JournalNodeService(self), server)
            where = format_address(self.rpc_host, self.rpc_port)
            try:
                port = server.add_insecure_port(where)
            except RuntimeError as e:
                raise StartupError(f"cannot listen for RPC on {where}: {e}") from None
            if port == 0:
                raise StartupError(
                    f"cannot listen for RPC on {where}: address already in use or unavailable"
                )
            self.rpc_port = port
            await server.start()
            self._grpc = server
            runner = web.AppRunner(make_app(self), access_log=None, handle_signals=False)
            await runner.setup()
            self._http = runner
            site = web.TCPSite(runner, self.http_host, self.http_port, reuse_address=True)
            try:
                await site.start()
            except OSError as e:
                where = format_address(self.http_host, self.http_port)
                raise StartupError(
                    f"cannot listen for HTTP on {where}: {e.strerror or e}"
                ) from None
            if self.http_port == 0:
                self.http_port = int(runner.addresses[0][1])
        except BaseException:
            await self.stop()
            raise
        if self.settings.sync_enabled and self.peers:
            self.syncer = JournalSyncer(self, self.peers, self.settings.sync_interval_ms / 1000)
            self._sync_task = asyncio.create_task(self.syncer.run(self._sync_stop))
        log.info(
            "JournalNode started: rpc=%s http=%s edits_dir=%s journals=%s",
            format_address(self.rpc_host, self.rpc_port),
            format_address(self.http_host, self.http_port),
            self.edits_dir,
            ",".join(sorted(self._journals)) or "-",
        )

    async def stop(self) -> None:
        """Stop serving, close every journal, release the locks."""
        if self._sync_task is not None:
            self._sync_stop.set()
            await self._sync_task
            self._sync_task = None
        if self._grpc is not None:
            await self._grpc.stop(grace=1.0)
            self._grpc = None
        if self._http is not None:
            await self._http.cleanup()
            self._http = None
        loop = asyncio.get_running_loop()
        for opened in list(self._journals.values()):
            try:
                await loop.run_in_executor(opened.executor, opened.journal.close)
            finally:
                opened.executor.shutdown(wait=True)
        self._journals.clear()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        self.stopped.set()


async def serve_forever(node: JournalNode, ready_file: Path | None = None) -> None:
    """Start a node, report readiness, and run until SIGTERM or SIGINT."""
    await node.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready_file is not None:
        import json

        tmp = ready_file.with_name(ready_file.name + ".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "rpc": format_address(node.rpc_host, node.rpc_port),
                    "http": format_address(node.http_host, node.http_port),
                }
            )
        )
        os.replace(tmp, ready_file)
    await stop.wait()
    log.info("JournalNode stopping")
    await node.stop()


__all__ = ["JournalNode", "StartupError", "StorageError", "check_edits_dir", "serve_forever"]
