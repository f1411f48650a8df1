"""The JournalNode daemon: journals by id, each on its own thread, behind Hadoop IPC and HTTP."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import queue
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import web

from qjm import __version__
from qjm.config import JournalNodeSettings, SecuritySettings, format_address
from qjm.errors import QjmError, describe_error
from qjm.fileutil import FileLockError, lock_file
from qjm.ipc import IpcServer
from qjm.ipc.server import ipc_limit_keys
from qjm.journalnode.accept_recovery import (
    begin_accept_recovery,
    download,
    finish_accept_recovery,
)
from qjm.journalnode.journal import FaultInjector, Journal
from qjm.journalnode.journal_status import status_of, status_snapshot
from qjm.journalnode.metrics import JournalNodeMetrics
from qjm.journalnode.storage import JNStorage
from qjm.journalnode.syncer import JournalNodeSyncer
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import JournalError, JournalNotFormattedError, StorageError
from qjm.protocol.identity import check_journal_id
from qjm.runtime import stop_on_signals, write_ready_file
from qjm.security import tls

log = logging.getLogger("qjm.journalnode")
T = TypeVar("T")
NODE_LOCK = "in_use.lock"
STATUS_TIMEOUT_SECONDS = 1.0  # status waits no longer for a busy journal's thread
FETCH_THREADS = 4
HTTP_SHUTDOWN_SECONDS = 2.0


class InflightBytes:
    """RPC request bytes being served now; a request past the limit is refused, not queued."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> int:
        """Count size bytes in, or raise naming the limit; call on the event loop only."""
        if size and self.used + size > self.limit:
            raise JournalError(
                f"JournalNode busy: a request of {size} bytes on top of {self.used} bytes in "
                f"flight would pass journalnode.max_inflight_request_bytes = {self.limit}; "
                "retry later"
            )
        self.used += size
        return size

    def release(self, size: int) -> None:
        """Count size bytes out."""
        self.used -= size


def _release_after(mine: asyncio.Future[None], ahead: asyncio.Future[None] | None) -> None:
    """Let the calls queued behind mine go, but never before those ahead of it."""

    def release(_: object = None) -> None:
        if not mine.done():
            mine.set_result(None)

    if ahead is None or ahead.done():
        release()
    else:
        ahead.add_done_callback(release)


class JournalNodeStartupError(QjmError):
    """The JournalNode cannot start: bad edits dir, busy port, locked storage."""


_Work = tuple[Callable[[], object], "asyncio.Future[Any]"]


class JournalThread:
    """One journal's thread: runs work in submission order, answers on the event loop.

    Leaner than a one-thread ThreadPoolExecutor behind run_in_executor: the work item is an
    asyncio future (no concurrent future to chain), and the results that finish while the
    loop has not yet taken the previous ones are handed over in one loop wakeup. A journal's
    progress wakeups raised on this thread ride along with that handover.
    """

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._finished: list[tuple[asyncio.Future[Any], object, BaseException | None]] = []
        self._progress: Callable[[], None] | None = None  # a notify to run with the handover
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        """Queue fn behind the work already queued; the future gets its result or error."""
        fut: asyncio.Future[T] = self.loop.create_future()
        self._queue.put((fn, fut))
        return fut

    def on_thread(self) -> bool:
        """True when called from this journal's thread."""
        return threading.current_thread() is self._thread

    def progress(self, notify: Callable[[], None]) -> None:
        """From this thread: run notify on the loop with the next handover of results."""
        with self._lock:
            self._progress = notify

    def shutdown(self) -> None:
        """Stop the thread after the work queued so far; waits for it."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        get = self._queue.get
        while True:
            item = get()
            if item is None:
                return
            fn, fut = item
            if fut.cancelled():  # as an executor skips work cancelled before it started
                continue
            result: object = None
            error: BaseException | None = None
            try:
                result = fn()
            except BaseException as e:  # handed to the caller, as an executor does
                error = e
            with self._lock:
                first = not self._finished
                self._finished.append((fut, result, error))
            if first:
                try:
                    self.loop.call_soon_threadsafe(self._hand_over)
                except RuntimeError:  # the loop is closed: nobody waits any more
                    return

    def _hand_over(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
            notify, self._progress = self._progress, None
        if notify is not None:
            notify()
        for fut, result, error in finished:
            if fut.cancelled():
                continue
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(result)


@dataclass
class _Open:
    journal: Journal
    executor: JournalThread


def check_edits_dir(path: str | Path) -> Path:
    """Validate (and create) the edits dir, naming the problem."""
    p = Path(path)
    if not p.is_absolute():
        raise JournalNodeStartupError(f"edits dir {str(p)!r} is not an absolute path")
    if p.exists() and not p.is_dir():
        raise JournalNodeStartupError(f"edits dir {p} is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise JournalNodeStartupError(f"cannot create edits dir {p}: {e.strerror}") from None
    if not os.access(p, os.W_OK | os.X_OK):
        raise JournalNodeStartupError(f"edits dir {p} is not writable")
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


LIMIT_KEYS = (
    "max_journals",
    "ipc_maximum_data_length",
    "max_inflight_request_bytes",
    "http_idle_timeout_ms",
    "http_max_connections",
    "ipc_max_connections",
    "ipc_idle_timeout_ms",
    "ipc_max_unfinished_bytes",
)


def check_limits(settings: JournalNodeSettings) -> None:
    """Refuse a resource limit that is not positive, naming its key."""
    for key in LIMIT_KEYS:
        value = getattr(settings, key)
        if value <= 0:
            raise JournalNodeStartupError(f"journalnode.{key} must be positive, got {value}")
    if settings.ipc_maximum_data_length > settings.max_inflight_request_bytes:
        raise JournalNodeStartupError(
            f"journalnode.ipc_maximum_data_length ({settings.ipc_maximum_data_length}) is "
            f"larger than journalnode.max_inflight_request_bytes "
            f"({settings.max_inflight_request_bytes}): the largest request would be refused"
        )
    if settings.ipc_maximum_data_length > settings.ipc_max_unfinished_bytes:
        raise JournalNodeStartupError(
            f"journalnode.ipc_maximum_data_length ({settings.ipc_maximum_data_length}) is "
            f"larger than journalnode.ipc_max_unfinished_bytes "
            f"({settings.ipc_max_unfinished_bytes}): the largest request could never arrive"
        )


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
            raise JournalNodeStartupError(
                f"cannot listen for {what} on {where}: {e.strerror or e}"
            ) from None


class JournalNode:
    """Holds the journals of one edits dir and serves them over Hadoop IPC and HTTP."""

    def __init__(
        self,
        edits_dir: str | Path,
        rpc_address: tuple[str, int],
        http_address: tuple[str, int],
        settings: JournalNodeSettings | None = None,
        faults: FaultInjector | None = None,
        peers: list[str] | None = None,
        *,
        https_address: tuple[str, int] | None = None,
        security: SecuritySettings | None = None,
    ) -> None:
        self.edits_dir = Path(edits_dir)
        self.node_id = uuid.uuid4().hex  # per process: one node named twice in a URI shows
        self.rpc_host, self.rpc_port = rpc_address
        self.http_host, self.http_port = http_address
        # dfs.http.policy (design §S.13): which of the two ports serve, which clients use
        self.security = security or SecuritySettings()
        self.https_host, self.https_port = https_address or (self.http_host, 0)
        self._https_server: asyncio.Server | None = None
        self.settings = settings or JournalNodeSettings()
        self.faults = faults
        self._journals: dict[str, _Open] = {}
        self.inflight = InflightBytes(self.settings.max_inflight_request_bytes)
        self._http_server: asyncio.Server | None = None
        self.broken: dict[str, str] = {}  # journals that failed to open at start: why
        self.progress: dict[str, Progress] = {}
        self._open_lock = asyncio.Lock()
        self.metrics = JournalNodeMetrics(
            self.journals, lambda: self.syncer is not None and self.syncer.running
        )
        self.metrics.watch_node(
            lambda: {
                "inflight_request_bytes": self.inflight.used,
                "http_connections": len(self.http_connections()),
                "journals_not_served": len(self.broken),
            }
        )
        self.metrics.watch_rpc(self.ipc_stats)
        self._lock_fd = -1
        self._ipc: IpcServer | None = None
        # Calls for a journal not open yet, in arrival order (see run).
        self._opening: dict[str, asyncio.Future[None]] = {}
        self._http: web.AppRunner | None = None
        self.stopped = asyncio.Event()
        self._stopping = False  # set first thing in stop(): no journal opens after it
        self.peers = list(peers or [])
        self.syncer: JournalNodeSyncer | None = None
        self._sync_stop = asyncio.Event()
        self._sync_task: asyncio.Task[None] | None = None
        # accept_recovery's downloads, off the journals' threads (a few at a time).
        self._fetch_pool = ThreadPoolExecutor(FETCH_THREADS, thread_name_prefix="segment-fetch")
        # What /conf shows (design §N.11): the cluster's configuration when started from one,
        # else this node's own settings under their HDFS keys.
        self.conf_source: Callable[[], list[tuple[str, str, str]]] = self._own_conf
        # Called with each journal as it opens (an in-process transport swaps its fetcher).
        self.on_journal_open: Callable[[Journal], None] = lambda journal: None

    # -- journals ------------------------------------------------------------------------------
    def _own_conf(self) -> list[tuple[str, str, str]]:
        """This node's own keys, as /conf shows them without a cluster configuration."""
        s = self.settings
        props = {
            "dfs.journalnode.edits.dir": str(self.edits_dir),
            "dfs.journalnode.rpc-address": f"{self.rpc_host}:{self.rpc_port}",
            "dfs.journalnode.http-address": f"{self.http_host}:{self.http_port}",
            "dfs.journalnode.enable.sync": str(s.sync_enabled).lower(),
            "dfs.journalnode.sync.interval": str(s.sync_interval_ms),
            "dfs.journalnode.edit-cache-size.bytes": str(s.edit_cache_size_bytes),
        }
        return [(k, v, "programmatically") for k, v in sorted(props.items())]

    def journals(self) -> list[Journal]:
        """The journals open now."""
        return [o.journal for o in list(self._journals.values())]

    async def _get(self, jid: str, create: bool) -> _Open:
        check_journal_id(jid)
        found = self._journals.get(jid)
        if found is not None:
            return found
        if jid in self.broken:
            raise StorageError(
                f"journal {jid!r} could not be opened at start: {self.broken[jid]}; fix or "
                "move aside that file and restart the JournalNode"
            )
        async with self._open_lock:
            found = self._journals.get(jid)
            if found is not None:
                return found
            if self._stopping:
                # stop() closes the journals it finds; one opened after would keep its
                # storage lock, and the node's next start could not open it.
                raise JournalError(f"the JournalNode is stopping; journal {jid!r} not opened")
            root = self.edits_dir / jid
            if not create and not root.is_dir():
                # Named by its id only: the answer goes to any caller (design §J.9).
                raise JournalNotFormattedError(
                    f"journal {jid!r} is not formatted on this JournalNode; run "
                    "`qjm journal format`"
                )
            held = len(self._journals) + len(self.broken)
            if not root.is_dir() and held >= self.settings.max_journals:
                raise JournalError(
                    f"this JournalNode holds {held} journals, the limit "
                    f"(journalnode.max_journals = {self.settings.max_journals}); refusing to "
                    f"create journal {jid!r}"
                )
            loop = asyncio.get_running_loop()
            executor = JournalThread(f"journal-{jid}", loop)
            try:
                journal = await executor.submit(
                    lambda: Journal(
                        jid,
                        JNStorage(root),
                        faults=self.faults,
                        cache_bytes=self.settings.edit_cache_size_bytes,
                    ),
                )
            except BaseException:
                executor.shutdown()
                raise
            self.metrics.attach(journal)
            progress = Progress()

            def wake(progress: Progress = progress, executor: JournalThread = executor) -> None:
                if executor.on_thread():  # answered with the call's result: no extra wakeup
                    executor.progress(progress.notify)
                else:
                    loop.call_soon_threadsafe(progress.notify)

            journal.on_progress = wake

            def gap() -> None:
                loop.call_soon_threadsafe(self._wake_syncer)

            journal.on_gap = gap
            self.on_journal_open(journal)
            self.progress[jid] = progress
            opened = _Open(journal, executor)
            self._journals[jid] = opened
            return opened

    def _wake_syncer(self) -> None:
        if self.syncer is not None:
            self.syncer.wake()

    async def _open_at_start(self, jid: str) -> None:
        """Open one journal; a failure marks only that journal broken, with a clear line."""
        try:
            await self._get(jid, create=False)
        except (QjmError, OSError, ValueError) as e:
            why = describe_error(e)
            self.broken[jid] = why
            log.error("journal %s is not served: %s", jid, why)

    async def run(self, jid: str, fn: Callable[[Journal], T], *, create: bool = False) -> T:
        """Run fn(journal) on that journal's thread, queued in the order run was called.

        For an open journal the work is queued before run first suspends, so calls made in
        one order (the IPC handlers of a pipelining writer) apply in that order. Calls that
        find the journal not open yet queue behind each other until it is.
        """
        return await self.submit(jid, fn, create=create)

    def submit(
        self, jid: str, fn: Callable[[Journal], T], *, create: bool = False
    ) -> asyncio.Future[T]:
        """Queue fn(journal) on that journal's thread now; the future of its result.

        Calls queue in the order submit (or run) was called, whether the journal is open
        or still opening.
        """
        opened = self._journals.get(jid)
        ahead = self._opening.get(jid)
        if opened is not None and ahead is None:
            journal = opened.journal
            return opened.executor.submit(lambda: fn(journal))
        loop = asyncio.get_running_loop()
        mine: asyncio.Future[None] = loop.create_future()
        self._opening[jid] = mine  # later calls queue behind this one from now on
        task = loop.create_task(self._run_when_open(jid, fn, create, mine, ahead))
        # Also when cancelled before its first step: the calls behind it must not hang.
        task.add_done_callback(lambda _: self._let_next_go(jid, mine, ahead))
        return task

    def _let_next_go(
        self, jid: str, mine: asyncio.Future[None], ahead: asyncio.Future[None] | None
    ) -> None:
        _release_after(mine, ahead)
        if self._opening.get(jid) is mine:
            del self._opening[jid]

    async def _run_when_open(
        self,
        jid: str,
        fn: Callable[[Journal], T],
        create: bool,
        mine: asyncio.Future[None],
        ahead: asyncio.Future[None] | None,
    ) -> T:
        try:
            if ahead is not None:
                await asyncio.shield(ahead)
            opened = await self._get(jid, create)
            journal = opened.journal
            work = opened.executor.submit(lambda: fn(journal))
        finally:
            self._let_next_go(jid, mine, ahead)
        return await work

    async def accept_recovery(
        self, jid: str, req: pb.RequestInfoProto, segment: pb.SegmentStateProto, from_url: str
    ) -> None:
        """accept_recovery with its download off the journal's thread (checked again after)."""
        plan = await self.run(jid, lambda j: begin_accept_recovery(j, req, segment, from_url))
        if plan.download is not None:
            journal = await self.journal(jid)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._fetch_pool, download, journal, plan)
        await self.run(jid, lambda j: finish_accept_recovery(j, req, segment, plan))

    async def journal(self, jid: str) -> Journal:
        """The open journal jid (opened if its storage exists); for thread-safe calls only."""
        return (await self._get(jid, create=False)).journal

    def ipc_stats(self) -> dict[str, int]:
        """The RPC server's counters (empty before start)."""
        return self._ipc.stats() if self._ipc is not None else {}

    async def is_formatted(self, jid: str) -> bool:
        """True when jid has formatted storage here; creates nothing."""
        check_journal_id(jid)
        if jid not in self._journals and not (self.edits_dir / jid / "current").is_dir():
            return False
        return await self.run(jid, lambda j: j.is_formatted())

    async def node_status(self) -> pb.NodeStatusProto:
        """Status of the node and every journal in its edits dir."""
        st = pb.NodeStatusProto(
            rpc_address=format_address(self.rpc_host, self.rpc_port),
            http_address=self.client_address(),
            version=__version__,
            node_id=self.node_id,
        )
        for jid in self._journal_dirs():
            if jid in self.broken:
                why = self.broken[jid]
                st.journals.add(jid=jid, problems=[f"not opened at start: {why}"])
                st.problems.append(f"journal {jid} is not served: {why}")
                continue
            st.journals.append(await self.journal_status(jid))
        return st

    async def journal_status(self, jid: str) -> pb.JournalStatusProto:
        """A journal's status; from a snapshot when its thread is busy, never blocking."""
        opened = self._journals.get(jid)
        if opened is None:
            opened = await self._get(jid, create=False)
        work = opened.executor.submit(functools.partial(status_of, opened.journal))
        try:
            async with asyncio.timeout(STATUS_TIMEOUT_SECONDS):
                return await asyncio.shield(work)
        except TimeoutError:
            work.add_done_callback(lambda f: f.cancelled() or f.exception())
            return status_snapshot(
                opened.journal,
                f"journal thread busy for more than {STATUS_TIMEOUT_SECONDS:g}s; "
                "values read without it",
            )

    def _journal_dirs(self) -> list[str]:
        names = set(self._journals) | set(self.broken)
        for entry in self.edits_dir.iterdir():
            if entry.is_dir() and (entry / "current").is_dir():
                try:
                    names.add(check_journal_id(entry.name))
                except QjmError:
                    log.warning("ignoring %s: not a valid journal id", entry)
        return sorted(names)

    def http_connections(self) -> list[object]:
        """The HTTP connections open now."""
        server = self._http.server if self._http is not None else None
        return list(server.connections) if server is not None else []

    def client_address(self) -> str:
        """host:port clients reach the HTTP server at: the HTTPS port under HTTPS_ONLY."""
        return tls.client_address(
            self.security.http_policy,
            format_address(self.http_host, self.http_port),
            format_address(self.https_host, self.https_port),
        )

    def client_port(self) -> int:
        """The port of client_address (what getJournalState reports as httpPort, as HDFS)."""
        return self.https_port if self.security.http_policy == tls.HTTPS_ONLY else self.http_port

    def http_url(self) -> str:
        """Base URL clients use (https under HTTPS_ONLY), for from_url and links."""
        return tls.client_url(
            self.security.http_policy, self.client_address(), self.client_address()
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def _lock_node(self) -> None:
        try:
            self._lock_fd = lock_file(
                self.edits_dir / NODE_LOCK,
                f"edits dir {self.edits_dir} is in use by another JournalNode",
            )
        except FileLockError as e:
            raise JournalNodeStartupError(str(e)) from None

    async def open_storage(self) -> None:
        """Check limits and the edits dir, lock it and open its journals; listens on nothing."""
        check_limits(self.settings)
        check_edits_dir(self.edits_dir)
        self._lock_node()
        try:
            for jid in self._journal_dirs():
                await self._open_at_start(jid)
        except BaseException:
            await self.stop()
            raise

    async def start(self) -> None:
        """Check storage, open the existing journals, start both servers."""
        from qjm.journalnode.http import capped_factory, make_app
        from qjm.journalnode.rpc import JournalNodeHandlers

        await self.open_storage()
        try:
            _check_bindable(self.rpc_host, self.rpc_port, "RPC")
            policy = self.security.http_policy
            if tls.serves_http(policy):
                _check_bindable(self.http_host, self.http_port, "HTTP")
            if tls.serves_https(policy):
                _check_bindable(self.https_host, self.https_port, "HTTPS")
            server = IpcServer(
                name="journalnode",
                max_data_length=self.settings.ipc_maximum_data_length,
                max_connections=self.settings.ipc_max_connections,
                idle_timeout_s=self.settings.ipc_idle_timeout_ms / 1000,
                max_unfinished_bytes=self.settings.ipc_max_unfinished_bytes,
                limit_keys=ipc_limit_keys("journalnode"),
            )
            JournalNodeHandlers(self).register(server)
            self._ipc = server
            try:
                await server.start(self.rpc_host, self.rpc_port)
            except OSError as e:
                where = format_address(self.rpc_host, self.rpc_port)
                raise JournalNodeStartupError(
                    f"cannot listen for RPC on {where}: {e.strerror or e}"
                ) from None
            self.rpc_port = server.port
            runner = web.AppRunner(
                make_app(self),
                access_log=None,
                handle_signals=False,
                # aiohttp closes a connection that has no whole request within this time from
                # its start or its last response: idle and half-sent connections alike.
                keepalive_timeout=self.settings.http_idle_timeout_ms / 1000,
                shutdown_timeout=HTTP_SHUTDOWN_SECONDS,  # a slow reader must not hold up a stop
            )
            await runner.setup()
            self._http = runner
            factory = capped_factory(runner, self.settings.http_max_connections)
            loop = asyncio.get_running_loop()
            if tls.serves_http(policy):
                try:
                    self._http_server = await loop.create_server(
                        factory, self.http_host, self.http_port, reuse_address=True
                    )
                except OSError as e:
                    where = format_address(self.http_host, self.http_port)
                    raise JournalNodeStartupError(
                        f"cannot listen for HTTP on {where}: {e.strerror or e}"
                    ) from None
                if self.http_port == 0:
                    self.http_port = int(self._http_server.sockets[0].getsockname()[1])
            if tls.serves_https(policy):
                context = await asyncio.to_thread(tls.server_context, self.security)
                try:
                    self._https_server = await loop.create_server(
                        factory, self.https_host, self.https_port, reuse_address=True, ssl=context
                    )
                except OSError as e:
                    where = format_address(self.https_host, self.https_port)
                    raise JournalNodeStartupError(
                        f"cannot listen for HTTPS on {where}: {e.strerror or e}"
                    ) from None
                if self.https_port == 0:
                    self.https_port = int(self._https_server.sockets[0].getsockname()[1])
        except BaseException:
            await self.stop()
            raise
        if self.settings.sync_enabled and self.peers:
            self.syncer = JournalNodeSyncer(self, self.peers, self.settings.sync_interval_ms / 1000)
            self._sync_task = asyncio.create_task(self.syncer.run(self._sync_stop))
        log.info(
            "JournalNode started: rpc=%s http=%s edits_dir=%s journals=%s",
            format_address(self.rpc_host, self.rpc_port),
            self.http_url(),
            self.edits_dir,
            ",".join(sorted(self._journals)) or "-",
        )

    async def stop(self) -> None:
        """Stop serving, close every journal, release the locks."""
        self._stopping = True
        if self._sync_task is not None:
            self._sync_stop.set()
            await self._sync_task
            self._sync_task = None
        if self._ipc is not None:
            await self._ipc.stop()
            self._ipc = None
        for srv in (self._http_server, self._https_server):
            if srv is not None:
                srv.close()
        self._http_server = self._https_server = None
        if self._http is not None:
            await self._http.cleanup()
            self._http = None
        for opened in list(self._journals.values()):
            opened.journal.fetcher.cancel_all()  # a download must not hold up the stop
        self._fetch_pool.shutdown(wait=False, cancel_futures=True)
        async with self._open_lock:  # a journal being opened is opened (and closed) first
            for opened in list(self._journals.values()):
                try:
                    await opened.executor.submit(opened.journal.close)
                finally:
                    opened.executor.shutdown()
            self._journals.clear()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1
        self.stopped.set()


async def serve_forever(node: JournalNode, ready_file: Path | None = None) -> None:
    """Start a node, report readiness, and run until SIGTERM or SIGINT."""
    await node.start()
    stop = stop_on_signals()
    if ready_file is not None:
        write_ready_file(
            ready_file,
            {
                "rpc": format_address(node.rpc_host, node.rpc_port),
                "http": node.client_address(),  # what clients use (§S.13)
                "scheme": tls.http_scheme(node.security.http_policy),
            },
        )
    await stop.wait()
    log.info("JournalNode stopping")
    await node.stop()


__all__ = [
    "JournalNode",
    "JournalNodeStartupError",
    "StorageError",
    "check_edits_dir",
    "serve_forever",
]
