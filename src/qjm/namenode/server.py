"""The NameNode daemon: a namespace, a write-ahead edit log on the quorum journal, HA states.

Start: INITIALIZING (load the newest image, replay the committed shared edits after it) ->
STANDBY (the tailer applies new committed edits). transition_to_active fences the old
writer by a new epoch, recovers and catches up, opens a segment, waits out the older
writers' leases -> ACTIVE. transition_to_standby closes the edit log and starts the tailer.
One lock serializes them.

A shared journal that ends before what this NameNode knows it committed (formatted, or
restored from an older copy) is never followed: nothing is applied from it, no transition
to active is made on it, and the condition is reported until the journal holds the
floor again (design §N.5).

The active answers a client only while its lease on the journal runs (design §N.1): each
answer is checked as it is sent, and a NameNode whose lease lapsed steps down to standby
and answers StandbyException instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qjm.client.lease import lease_clock, lease_left, older_leases_end, renewal_due
from qjm.client.quorum_call import fencing_error
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import QJournalUri, parse_qjournal_uri
from qjm.config import ClusterConfig, NameNodeConfig, format_address, parse_address
from qjm.editlog.ops import Op, OpEncodeError, decode_op, encode_body
from qjm.errors import ConfigError, QjmError, describe_error
from qjm.ipc import IpcServer
from qjm.ipc.sasl import client_security, server_security
from qjm.ipc.server import CallContext, ipc_limit_keys
from qjm.namenode.audit import AUDIT_LOG, AuditLog
from qjm.namenode.block_tokens import block_token_manager
from qjm.namenode.delegation import TokenPolicy
from qjm.namenode.errors import (
    HealthCheckFailedError,
    IllegalArgumentError,
    NamenodeError,
    RetriableError,
    SafeModeError,
    ServiceFailedError,
    StandbyError,
)
from qjm.namenode.ha_state import HAStateMachine
from qjm.namenode.journal_check import (
    Floor,
    JournalEndProbe,
    behind_message,
    decided,
    ends_text,
    journal_behind,
    journal_floor,
    local_floor,
    read_local_segments,
)
from qjm.namenode.retry_cache import RetryCache
from qjm.namenode.types import Caller, FileStatus, HAState
from qjm.protocol.errors import EpochError
from qjm.runtime import stop_on_signals, write_ready_file
from qjm.security import tls
from qjm.security.users import os_groups, os_user

if TYPE_CHECKING:
    from qjm.hdfs.datanode_protocol import HAStatus, NamespaceInfo
    from qjm.namenode.checkpointer import StandbyCheckpointer
    from qjm.namenode.edit_log import FSEditLog
    from qjm.namenode.metrics import NameNodeMetrics
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.service import Plan
    from qjm.namenode.storage import NNStorage
    from qjm.namenode.tailer import EditLogTailer

log = logging.getLogger("qjm.namenode")
GROUPS_CACHE_S = 300.0  # hadoop.security.groups.cache.secs
HTTP_SHUTDOWN_SECONDS = 2.0
HTTP_IDLE_TIMEOUT_S = 60.0  # hadoop.http.idle_timeout.ms
EPOCH_CHECK_S = 1.0  # how often an active asks the JournalNodes whether it was deposed
JOURNAL_CHECK_S = 2.0  # how often a standby asks whether the shared journal went behind it


class NameNodeStartupError(QjmError):
    """The NameNode cannot start: a locked or unformatted name dir, a busy port, no image."""


def _fenced(exc: BaseException | None) -> bool:
    """True when exc (or what caused it) says a newer writer holds the journal."""
    return fencing_error(exc) is not None


def encode_for_log(method: str, ops: list[Op]) -> list[bytes]:
    """Each op's edit-log body, or IllegalArgumentError naming what does not fit (design §N.4).

    Called before any op of a call is applied, so a request whose ops cannot be written
    (a name past a 16-bit length field) is refused and changes nothing.
    """
    bodies = []
    for op in ops:
        try:
            bodies.append(encode_body(op))
        except OpEncodeError as e:
            raise IllegalArgumentError(
                f"{method} refused: {e} (a path, client name, user or group name in the "
                "request is too long for the edit log); nothing was applied or logged"
            ) from None
    return bodies


class NameNode:
    """One NameNode of an HA pair: serves ClientProtocol and HAServiceProtocol (NameNodeService)."""

    def __init__(self, cfg: ClusterConfig, name: str, *, user: str | None = None) -> None:
        self.cfg = cfg
        self.conf: NameNodeConfig = cfg.namenode_named(name)
        self.name = name
        self.settings = cfg.namenode
        sec = cfg.security
        self.token_policy = TokenPolicy(  # delegation tokens (design §S.10)
            max_lifetime_ms=sec.delegation_token_max_lifetime_ms,
            renew_interval_ms=sec.delegation_token_renew_interval_ms,
            key_update_interval_ms=sec.delegation_key_update_interval_ms,
        )
        login = client_security()  # under Kerberos the superuser is the NameNode's principal
        self.superuser = user or (login.user if login is not None else os_user())
        self.uri: QJournalUri = parse_qjournal_uri(cfg.shared_edits_uri())
        self.rpc_host, self.rpc_port = parse_address(self.conf.rpc_address, "rpc_address")
        self.http_host, self.http_port = parse_address(self.conf.http_address, "http_address")
        # dfs.http.policy (design §S.13): the HTTPS port, served under HTTPS_ONLY and both
        self.https_host, self.https_port = (
            parse_address(self.conf.https_address, "https_address")
            if self.conf.https_address
            else (self.http_host, 0)
        )
        self._https_server: asyncio.Server | None = None
        self.ha = HAStateMachine(name)
        self.storage: NNStorage | None = None
        self.audit: AuditLog | None = None  # the audit log, while serving (design §S.7)
        self._ns: Namespace | None = None
        self.applied_txid = 0  # the newest txid applied to the namespace here
        # txid of the newest image in the name dir: loaded at start, saved by this NameNode's
        # checkpointer or received over /imagetransfer. The one source of the status page,
        # /status and /metrics.
        self.image_txid = 0
        self.edit_log: FSEditLog | None = None
        self.qjm: QuorumJournalManager | None = None
        self.tailer: EditLogTailer | None = None
        self._reader: QuorumJournalReader | None = None
        self.checkpointer: StandbyCheckpointer | None = None
        self.transition_lock = asyncio.Lock()
        self.apply_lock = asyncio.Lock()  # held while the namespace changes off the write path
        self._applied_event = asyncio.Event()
        self._groups: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._ipc: IpcServer | None = None
        self._http: Any = None  # aiohttp AppRunner
        self._http_server: asyncio.Server | None = None
        self.failed = asyncio.Event()  # set by a fatal error: the daemon exits 1
        self.exit_code = 0
        self.fatal_error: str | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.started_at = time.time()
        self.last_transition_error: str | None = None
        self._needs_reload = False  # deposed: the namespace may hold edits no quorum took
        self.retry_cache: RetryCache | None = None
        if self.settings.retry_cache_enabled:
            self.retry_cache = RetryCache(
                self.settings.retry_cache_expiry_ms / 1000, self.settings.retry_cache_max_entries
            )
        self._known_committed = 0  # the highest txid a quorum is known to have committed
        self._seen_recorded = 0  # the highest synced txid recorded as seen_txid
        self.journal_behind: str | None = None  # why the shared journal is not followed
        self.journal_checks = 0
        self._probe: JournalEndProbe | None = None
        # The active's lease (design §N.1): its length, the active term it belongs to (a
        # new one each time this NameNode becomes active), and the answer check of that term.
        self.lease_s = cfg.active_lease_ms() / 1000
        self._term = 0
        self._answer_check: Callable[[], BaseException | None] | None = None
        self.lease_lapses = 0  # times this NameNode stepped down because its lease lapsed
        self.last_lease_wait_s = 0.0  # how long the last transition waited out older leases
        from qjm.namenode.block_service import NameNodeBlocks
        from qjm.namenode.blocks.host_file import read_hosts
        from qjm.namenode.metrics import NameNodeMetrics

        # Block management beside the namespace, fed by its apply path (design §B.14).
        self._dn_namespace: NamespaceInfo | None = None
        self.blocks = NameNodeBlocks(
            self.datanode_namespace_info,
            lambda: self._ns,
            cfg.datanode,
            block_size=self.settings.block_size,
            tokens=block_token_manager(cfg, name),
        )
        self.ha.listeners.append(self._blocks_follow_ha)
        self.blocks.excluded = read_hosts(self.settings.hosts_exclude)  # design §B.20
        from qjm.namenode.lease_manager import LeaseRecovery

        # Leases and block recovery on the active (design §B.16).
        self.leases = LeaseRecovery(self, self.settings)
        self.blocks.committer = self.leases.commit_block_synchronization
        self.metrics: NameNodeMetrics = NameNodeMetrics(self)

    # -- block management (design §B.14) ----------------------------------------------------
    def datanode_namespace_info(self) -> NamespaceInfo:
        """The namespace and block pool DataNodes are told (versionRequest), from VERSION."""
        if self._dn_namespace is None:
            from qjm.namenode.block_service import namespace_info_of

            assert self.storage is not None
            v = self.storage.read_ns_info()
            self._dn_namespace = namespace_info_of(
                v.block_pool_id, v.namespace_id, v.cluster_id, v.layout_version, v.ctime
            )
        return self._dn_namespace

    def ha_status(self, ctx: CallContext) -> HAStatus:
        """The HA status a heartbeat answer carries (design §B.12): ACTIVE only at the
        txid a majority holds, and only while the active's lease runs (design §N.1)."""
        from qjm.hdfs.datanode_protocol import HAState as DnHAState
        from qjm.namenode.datanode_rpc import ServiceHAStatus

        self.check_lease()
        status = ServiceHAStatus(self).ha_status(ctx)
        if status.state is DnHAState.ACTIVE:
            ctx.answer_check = self._answer_check
        return status

    def _blocks_follow_ha(self, frm: HAState, to: HAState) -> None:
        """Commands only from the active; a new active postpones deletions (design §B.6)."""
        if to == HAState.ACTIVE:
            self.blocks.set_active(True)
        elif frm == HAState.ACTIVE:
            self.blocks.set_active(False)

    def _check_safe_mode(self, method: str) -> None:
        """Refuse a namespace change in safe mode: retriable in start-up safe mode, as
        HDFS's HA NameNode, SafeModeException in an operator's (design §B.14)."""
        sm = self.blocks.safe_mode
        if not sm.is_on:
            return
        tip = self.blocks.bm.safe_mode_tip()
        if sm.status is sm.status.MANUAL:
            raise SafeModeError(f"Cannot {method}. Name node is in safe mode.\n{tip}")
        raise RetriableError(f"Cannot {method}. Name node is in safe mode.\n{tip}")

    async def _block_monitor(self) -> None:
        """Every redundancy interval: dead DataNodes, start-up safe mode, re-replication."""
        period_s = self.settings.redundancy_interval_ms / 1000
        while self.ha.state != HAState.STOPPING:
            await asyncio.sleep(period_s)  # the check's period, not a synchronization
            try:
                self.blocks.tick()
            except Exception as e:
                log.error("NameNode %s: block monitor: %s", self.name, describe_error(e))

    # -- NameNodeService ----------------------------------------------------------------------
    @property
    def ns(self) -> Namespace:
        """The namespace (after start)."""
        if self._ns is None:
            raise StandbyError(f"NameNode {self.name} has not loaded its namespace yet")
        return self._ns

    @property
    def ha_state(self) -> HAState:
        """The current HA state."""
        return self.ha.state

    def caller_of(self, ctx: CallContext) -> Caller:
        """The Caller of an RPC: its user, the user's OS groups, and whether a superuser."""
        return self.caller_named(ctx.user or "nobody")

    def audit_log(self) -> AuditLog | None:
        """The audit log while serving, None when it is off (design §S.7)."""
        return self.audit

    def audit_status(self, path: str) -> FileStatus | None:
        """A path's status for the audit line, None when it does not exist."""
        if self._ns is None:
            return None
        try:
            return self._ns.stat(path, Caller(self.superuser, (), True))
        except Exception:  # a path that no longer resolves: the line says perm=null
            return None

    def token_password(self, identifier: bytes) -> tuple[str, bytes]:
        """The owner and password of a live delegation token, for SASL DIGEST-MD5 (design
        §S.10); a NameNode that is not active refuses (StandbyError: the client fails over),
        as a standby may not know every token yet (HDFS's retrievePassword)."""
        self.check_lease()
        self.ha.check_active("READ")
        ident, password = self.ns.tokens.password_of(identifier, time.time_ns() // 1_000_000)
        return ident.owner, password

    def caller_named(self, user: str) -> Caller:
        """The Caller for a user name: the user's OS groups, and whether a superuser."""
        now = time.monotonic()
        cached = self._groups.get(user)
        if cached is None or now - cached[0] > GROUPS_CACHE_S:
            cached = (now, os_groups(user))
            self._groups[user] = cached
        groups = cached[1]
        superuser = user == self.superuser or self.settings.superuser_group in groups
        return Caller(user, groups, superuser)

    def last_txid(self) -> int:
        """The newest txid applied here (the state id of every RPC response)."""
        el = self.edit_log
        if el is not None and self.ha.is_active():
            return int(el.last_txid)
        return self.applied_txid

    def state_id(self) -> int:
        """The state id sent in every RPC response: the newest txid a client may have seen.

        On the active that is the synced txid (no answer shows an unsynced edit, and an op
        logged but not yet synced, such as a new segment's START, would make an observer
        wait for the next write); elsewhere the last applied txid.
        """
        el = self.edit_log
        if el is not None and self.ha.is_active():
            return int(el.synced_txid)
        return self.applied_txid

    def synced_txid(self) -> int | None:
        """The newest txid the quorum holds (active only)."""
        el = self.edit_log
        return int(el.synced_txid) if el is not None else None

    async def _sync_pending(self) -> None:
        """Wait until everything logged so far is synced (a no-op when nothing is pending)."""
        el = self.edit_log
        if el is None:
            return
        last = int(el.last_txid)
        if el.synced_txid < last:
            try:
                await el.sync(last)
            except Exception as e:
                raise self._sync_failed(e) from None

    async def read(self, ctx: CallContext) -> Namespace:
        """The namespace to answer a read from, once every edit it may show is synced."""
        state = self.ha.state
        if state == HAState.ACTIVE:
            ctx.answer_check = self._answer_check  # sent only while the lease runs
            await self._sync_pending()
            self.ha.check_active("READ")  # deposed while waiting
            return self.ns
        state_id = ctx.state_id
        if state_id is None or state != HAState.STANDBY:
            self.ha.check_active("READ")
            raise AssertionError("unreachable: check_active raises unless active")
        await self._wait_applied(state_id)
        return self.ns

    async def refresh_nodes(self) -> tuple[list[str], list[str]]:
        """Read the exclude list again and apply it (refreshNodes, design §B.20)."""
        from qjm.namenode.blocks.host_file import read_hosts

        entries = await asyncio.to_thread(read_hosts, self.settings.hosts_exclude)
        return self.blocks.refresh_nodes(entries)

    async def read_as_active(self) -> tuple[Namespace, Callable[[], BaseException | None]]:
        """The active's namespace for a read outside RPC (an HTTP report), once every edit it
        may show is synced, and the check to make before its verdict is sent (§N.1)."""
        self.ha.check_active("READ")
        check = self._answer_check
        await self._sync_pending()
        self.ha.check_active("READ")
        assert check is not None, "an active NameNode has an answer check"
        return self.ns, check

    async def _wait_applied(self, txid: int) -> None:
        """Wait (bounded by observer_read_wait_ms) until txid is applied here."""

        def ready() -> bool:
            # A deposed NameNode's namespace may hold edits no quorum took until reloaded.
            return self.applied_txid >= txid and self._ns is not None and not self._needs_reload

        if ready():
            return
        wait_s = self.settings.observer_read_wait_ms / 1000
        deadline = time.monotonic() + wait_s
        while not ready():
            left = deadline - time.monotonic()
            if left <= 0:
                raise RetriableError(
                    f"NameNode {self.name} has applied txid {self.applied_txid}, older than "
                    f"the client's state id {txid}, after waiting {wait_s:g}s; retry"
                )
            event = self._applied_event
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await event.wait()
            if self.ha.state not in (HAState.STANDBY, HAState.ACTIVE):
                self.ha.check_active("READ")

    def _notify_applied(self) -> None:
        event, self._applied_event = self._applied_event, asyncio.Event()
        event.set()

    def check_write(self, ctx: CallContext) -> None:
        """Raise StandbyError unless active (before a retry cache lookup, as HDFS); an active
        whose lease lapsed steps down first (design §N.1)."""
        self.check_lease()
        self.ha.check_active("WRITE")

    async def write(self, ctx: CallContext, plan: Plan) -> list[Op]:
        """Run plan, apply and log its ops, and return them once the quorum holds them."""
        self.check_lease()  # a stale namespace is neither planned on nor changed
        self.ha.check_active("WRITE")
        el = self.edit_log
        ns = self.ns
        assert el is not None
        ctx.answer_check = self._answer_check  # until its ops are logged: see below
        ops = plan(ns)  # validation only: its refusals reach the client untouched
        if not ops:
            await self._sync_pending()  # the answer may reflect edits not yet synced
            return ops
        self._check_safe_mode(ctx.method)
        bodies = encode_for_log(ctx.method, ops)  # design §N.4: nothing applied unless it fits
        txid = 0
        blocks = self.blocks
        blocks.writing = True  # removed blocks wait for the sync (design §B.14)
        try:
            for i, op in enumerate(ops):
                try:
                    ns.apply(op)
                except Exception as e:
                    if i == 0:
                        raise  # nothing changed yet: a refusal the plan did not foresee
                    self._fatal(
                        f"applying {type(op).__name__} after logging part of a call: "
                        f"{describe_error(e)}"
                    )
                    raise
                self._follow_blocks(ns, op, live=True)
                try:
                    txid = el.log(op, bodies[i])
                except Exception as e:
                    self._fatal(
                        f"logging {type(op).__name__} after applying it: {describe_error(e)}"
                    )
                    raise
        finally:
            blocks.writing = False
            removed = blocks.take_removed()
        self.applied_txid = txid
        self.metrics.count_ops(ctx.method, len(ops))
        # From here the answer is the quorum's: a success means a majority took the ops at
        # this writer's epoch, true whenever it is sent (design §N.1).
        ctx.answer_check = None
        try:
            await el.sync(txid)
        except Exception as e:
            raise self._sync_failed(e) from None
        if self.ha.is_active() and self.edit_log is el:
            blocks.drop_removed(removed)  # deletions only for a synced removal (§B.12)
        return ops

    def _follow_blocks(self, ns: Namespace, op: Op, *, live: bool) -> None:
        """The block map follows an applied op; a failure there is logged, not fatal: the
        namespace is right and the next full reports mend the map (design §B.14)."""
        try:
            self.blocks.follow(ns, op, live=live)
        except Exception as e:
            self.metrics.block_map_errors += 1
            log.error(
                "NameNode %s: the block map could not follow %s: %s",
                self.name,
                type(op).__name__,
                describe_error(e),
            )

    async def roll_edits(self, ctx: CallContext) -> int:
        """rollEdits: finalize the open segment; the new one's first txid (design §N.11)."""
        from qjm.namenode.admin_calls import roll_edits

        return await roll_edits(self, ctx)

    async def save_namespace(self, ctx: CallContext) -> int:
        """saveNamespace: an image of the namespace in safe mode; its txid (design §N.11)."""
        from qjm.namenode.admin_calls import save_namespace

        return await save_namespace(self, ctx)

    async def meta_save(self, ctx: CallContext, filename: str) -> str:
        """metaSave: the block and DataNode state into the log directory; the path."""
        from qjm.namenode.admin_calls import meta_save

        return str(await meta_save(self, ctx, filename))

    async def msync(self, ctx: CallContext) -> None:
        """Return once everything applied here is synced (StandbyError unless active)."""
        self.ha.check_active("msync")
        ctx.answer_check = self._answer_check
        await self._sync_pending()

    def service_status(self) -> tuple[HAState, bool, str]:
        """(state, ready to become active, why not)."""
        self.check_lease()  # never "active" with a lapsed lease
        state = self.ha.state
        if state in (HAState.STANDBY, HAState.ACTIVE):
            return state, True, ""
        if state == HAState.INITIALIZING:
            return state, False, "the NameNode is still loading its namespace"
        return state, False, f"the NameNode is stopping: {self.ha.why_stopping or 'shut down'}"

    async def monitor_health(self) -> None:
        """Return when healthy; raise HealthCheckFailedError naming what is wrong."""
        if self.ha.state == HAState.STOPPING:
            raise HealthCheckFailedError(
                f"NameNode {self.name} is stopping: {self.ha.why_stopping or 'shut down'}"
            )
        if self.ha.state == HAState.INITIALIZING:
            raise HealthCheckFailedError(f"NameNode {self.name} is still starting")
        name_dir = Path(self.conf.name_dir)
        if not os.access(name_dir, os.W_OK | os.X_OK):
            raise HealthCheckFailedError(f"name dir {name_dir} is not writable")
        if self.journal_behind is not None:
            raise HealthCheckFailedError(f"NameNode {self.name}: {self.journal_behind}")

    # -- HA transitions ------------------------------------------------------------------------
    async def transition_to_active(self, source: str = "REQUEST_BY_USER") -> None:
        """Fence the old writer, recover, catch up, open a segment: ACTIVE (no-op when active)."""
        async with self.transition_lock:
            if self.ha.state == HAState.ACTIVE:
                return
            if self.ha.state != HAState.STANDBY:
                raise ServiceFailedError(
                    f"NameNode {self.name} cannot become active from state "
                    f"{self.ha.state.name.lower()}"
                )
            await self._settle_deposed()  # a namespace with edits no quorum took is reloaded
            if self.ha.state != HAState.STANDBY:
                raise ServiceFailedError(
                    f"NameNode {self.name} cannot become active: {self.fatal_error or 'stopping'}"
                )
            # Refused before fencing anyone when the journal is known to be behind; else
            # the recovered end is checked against the floor below (design §N.5).
            behind = self.journal_behind
            if behind is None and self._needs_reload:
                behind = "it was deposed and has not reloaded its namespace yet"
            if behind is not None:
                self.last_transition_error = behind
                log.error("NameNode %s: will not become active: %s", self.name, behind)
                raise ServiceFailedError(f"NameNode {self.name} will not become active: {behind}")
            log.info("NameNode %s: becoming active (%s)", self.name, source)
            started = time.monotonic()
            if self.checkpointer is not None:
                await self.checkpointer.pause()
            await self._stop_tailer()
            qjm = QuorumJournalManager(self.uri, self._ns_info(), self.cfg.qjournal)
            try:
                last = await qjm.recover_unfinalized_segments()
                floor = await self.journal_floor_now()
                if last < floor.txid:  # the recovered journal ends before it (design §N.5)
                    raise NamenodeError(
                        await self._journal_is_behind(
                            floor, f"recovered by this NameNode, it ends at txid {last}"
                        )
                    )
                assert qjm.epoch_won_at is not None
                answer_from = older_leases_end(
                    qjm.epoch_won_at, qjm.older_writer_idle_s, self.lease_s
                )
                await self._catch_up(last)
                el = self._make_edit_log(qjm)
                await el.open_for_write(last + 1)
                self._spawn(self._keep_lease(qjm))
                # The older writers' leases run out meanwhile (design §N.1); what is left:
                wait_s = max(0.0, answer_from - lease_clock())
                self.last_lease_wait_s = wait_s
                if wait_s > 0:
                    log.info(
                        "NameNode %s: waiting %.3fs more for older writers' leases to run out",
                        self.name,
                        wait_s,
                    )
                    await asyncio.sleep(wait_s)  # the rule's own wait, not a synchronization
                left = lease_left(qjm.lease_renewed_at, lease_clock(), self.lease_s)
                if left <= 0:
                    raise NamenodeError(
                        f"no quorum of JournalNodes renewed this NameNode's lease on the "
                        f"shared journal in the last {self.lease_s:g}s"
                    )
            except BaseException as e:
                await self._close_quietly(qjm)
                self.last_transition_error = describe_error(e)
                log.error("NameNode %s: could not become active: %s", self.name, describe_error(e))
                if self.ha.state == HAState.STANDBY:
                    self._start_tailer()
                    if self.checkpointer is not None:
                        self.checkpointer.resume()
                if isinstance(e, asyncio.CancelledError):
                    raise
                raise ServiceFailedError(
                    f"NameNode {self.name} could not become active: {describe_error(e)}"
                ) from None
            if not self.ha.is_in(HAState.STANDBY):  # stopped (or failed) meanwhile
                with contextlib.suppress(Exception):
                    await el.close()
                await self._close_quietly(qjm)
                raise ServiceFailedError(
                    f"NameNode {self.name} stopped while becoming active "
                    f"({self.fatal_error or self.ha.why_stopping or 'shut down'})"
                )
            self.qjm = qjm
            self.edit_log = el
            self.applied_txid = int(el.last_txid)  # the new segment's START op
            self._known_committed = max(self._known_committed, last)
            self.last_transition_error = None
            self._term += 1
            self._answer_check = functools.partial(self._check_answer, self._term)
            self.ha.move(HAState.ACTIVE, source)
            self._spawn(self._watch_epoch(qjm))
            log.info(
                "NameNode %s is active: epoch %s, writing from txid %d (took %.3fs)",
                self.name,
                qjm.epoch,
                last + 1,
                time.monotonic() - started,
            )

    # -- the active's lease (design §N.1) --------------------------------------------------
    def lease_left_s(self) -> float | None:
        """Seconds the active's lease still runs (0 or less: lapsed); None unless active."""
        qjm = self.qjm
        if qjm is None or not self.ha.is_active():
            return None
        return lease_left(qjm.lease_renewed_at, lease_clock(), self.lease_s)

    def check_lease(self) -> None:
        """Step down to standby now if active with a lapsed lease (before answering anyone)."""
        left = self.lease_left_s()
        if left is not None and left <= 0:
            self._lease_lapsed(-left)

    def _check_answer(self, term: int) -> BaseException | None:
        """The answer check of an answer computed as active in term: None while this
        NameNode is still active in that term with a running lease, else the StandbyError
        to send instead (stepping down first when the lease lapsed)."""
        if self._term == term and self.ha.is_active():
            self.check_lease()
            if self.ha.is_active():
                return None
        try:
            self.ha.check_active()
        except NamenodeError as e:
            return e
        return StandbyError(
            f"NameNode {self.name} stopped being active while answering; it is active again "
            "in a new term, retry"
        )

    def _lease_lapsed(self, late_s: float) -> None:
        """The lease ran out: go standby before answering, stop writing, reload and tail."""
        if not self.ha.is_active():
            return
        self.lease_lapses += 1
        log.error(
            "NameNode %s: its lease on the shared journal lapsed %.3fs ago (no quorum of "
            "JournalNodes accepted a call at its epoch for %.3fs: a pause, a clock jump or "
            "unreachable JournalNodes); another NameNode may be active now, so it steps down "
            "to standby before answering anything",
            self.name,
            late_s,
            self.lease_s + late_s,
        )
        self.ha.move(HAState.STANDBY, "its lease on the shared journal lapsed")
        self._needs_reload = True
        self._spawn(self._after_deposed())

    async def _keep_lease(self, qjm: QuorumJournalManager) -> None:
        """While qjm writes: a heartbeat at its epoch whenever nothing renewed its lease for
        a quarter of the lease (journal batches renew it while edits flow)."""
        tick = self.lease_s / 8  # the renewal check's period, not a synchronization
        while not qjm.closed:
            if renewal_due(qjm.lease_renewed_at, lease_clock(), self.lease_s):
                try:
                    qjm.renew_lease()
                except QjmError:
                    return  # no longer the writer
            await asyncio.sleep(tick)

    @property
    def needs_reload(self) -> bool:
        """True between being deposed and reloading: the namespace may hold unsynced edits."""
        return self._needs_reload

    def _ns_info(self) -> Any:
        """The name dir's namespace identity as the journal's NamespaceInfoProto."""
        assert self.storage is not None
        return self.storage.read_ns_info().to_proto()

    async def _catch_up(self, last: int) -> None:
        """Apply every committed edit after the last applied one, up to last."""
        if last < self.applied_txid:
            raise NamenodeError(
                f"the shared journal ends at txid {last} but this NameNode applied up to "
                f"{self.applied_txid}: its namespace holds edits the journal lost"
            )
        if last == self.applied_txid:
            return
        async with self.apply_lock:
            reader = self._journal_reader()
            async for raw in reader.read(self.applied_txid + 1, True, last):
                self._apply_replayed(raw.txid, decode_op(raw))
        if self.applied_txid != last:
            raise NamenodeError(
                f"catching up to txid {last}, the shared journal gave txids only up to "
                f"{self.applied_txid}"
            )

    async def transition_to_standby(self, source: str = "REQUEST_BY_USER") -> None:
        """Stop writing, start tailing: STANDBY (no-op when standby)."""
        async with self.transition_lock:
            if self.ha.state == HAState.STANDBY:
                return
            if self.ha.state != HAState.ACTIVE:
                raise ServiceFailedError(
                    f"NameNode {self.name} cannot become standby from state "
                    f"{self.ha.state.name.lower()}"
                )
            self.ha.move(HAState.STANDBY, source)  # new calls are refused from here on
            el, qjm = self.edit_log, self.qjm
            self.edit_log, self.qjm = None, None
            try:
                if el is not None:
                    await el.close()
                    self.applied_txid = int(el.last_txid)
                    self._known_committed = max(self._known_committed, int(el.synced_txid))
                if qjm is not None:
                    await qjm.release_lease(self.lease_s)  # standby: answers nothing as active
            except Exception as e:
                if not _fenced(e):
                    if qjm is not None:
                        await self._close_quietly(qjm)
                    self._fatal(f"closing the edit log failed: {describe_error(e)}")
                    raise ServiceFailedError(
                        f"NameNode {self.name} failed closing its edit log: {describe_error(e)}"
                    ) from None
                log.warning("NameNode %s: fenced while closing the edit log: %s", self.name, e)
                if el is not None:
                    await self._record_seen(int(el.synced_txid))
                    self._known_committed = max(self._known_committed, int(el.synced_txid))
                    el.abort()
                if qjm is not None:
                    await self._close_quietly(qjm)
                self._needs_reload = True
                await self._settle_deposed()  # reloads, unless the journal is behind (§N.5)
                return
            if qjm is not None:
                await self._close_quietly(qjm)
            self._start_tailer()
            if self.checkpointer is not None:
                self.checkpointer.resume()

    # -- failures ------------------------------------------------------------------------------
    def _on_edit_log_failure(self, exc: BaseException) -> None:
        """FSEditLog's on_fatal: fenced -> standby; any other quorum failure -> exit 1."""
        if _fenced(exc):
            self._deposed(exc)
        elif self._needs_reload and self.ha.is_in(HAState.STANDBY):
            # Stepped down already: the edit log it dropped failed under a roll or a flush.
            log.warning(
                "NameNode %s: the dropped edit log failed: %s", self.name, describe_error(exc)
            )
        else:
            self._fatal(f"edit log sync to the quorum failed: {describe_error(exc)}")

    def _sync_failed(self, exc: BaseException) -> NamenodeError:
        """The error a caller gets for a failed sync (and the state change it causes)."""
        if _fenced(exc):
            self._deposed(exc)
            return StandbyError(
                f"NameNode {self.name} was deposed by a newer writer of the shared journal "
                f"and is not active: {describe_error(exc)}"
            )
        if self._needs_reload and self.ha.is_in(HAState.STANDBY):
            # It stepped down (design §N.1) and dropped its edit log under this sync: the
            # next active's recovery decides whether the edit stays.
            return StandbyError(
                f"NameNode {self.name} stepped down to standby while the edit was being "
                f"synced; whether it took effect is for the active to tell: {describe_error(exc)}"
            )
        self._fatal(f"edit log sync to the quorum failed: {describe_error(exc)}")
        return NamenodeError(
            f"NameNode {self.name}: the edit could not be synced to the quorum journal "
            f"({describe_error(exc)}); the NameNode is stopping"
        )

    def _deposed(self, exc: BaseException) -> None:
        """A newer writer fenced this one: refuse writes now, reload and tail in the background."""
        if self.ha.state != HAState.ACTIVE:
            return
        log.error(
            "NameNode %s was deposed: another NameNode holds a newer epoch of the shared "
            "journal (%s); going to standby",
            self.name,
            describe_error(exc),
        )
        el = self.edit_log
        if el is not None:  # what a quorum acknowledged stays the floor (design §N.5)
            self._known_committed = max(self._known_committed, int(el.synced_txid))
        self.ha.move(HAState.STANDBY, "fenced by a newer writer")
        self._needs_reload = True
        self._spawn(self._after_deposed())

    async def _watch_epoch(self, qjm: QuorumJournalManager) -> None:
        """While active: ask the JournalNodes every EPOCH_CHECK_S whether a newer writer
        was promised; if so this NameNode is deposed now, not only at its next write.

        Own connections, not the writer's channels: a call queued on a writer's channel
        would hold back the heartbeat that reports its last batch committed to readers.
        """
        from qjm.client.journalnode_client import JournalNodeClient
        from qjm.protocol import qjournal_pb2 as pb
        from qjm.protocol.qjournal import journal_id

        mine = qjm.epoch or 0
        clients = [JournalNodeClient(a) for a in self.uri.addresses]
        req = pb.GetJournalStateRequestProto(jid=journal_id(self.uri.jid))

        async def promised(c: JournalNodeClient) -> int:
            resp = await c.call("getJournalState", req, EPOCH_CHECK_S)
            return int(resp.last_promised_epoch)

        try:
            while self.ha.state == HAState.ACTIVE and self.qjm is qjm:
                await asyncio.sleep(EPOCH_CHECK_S)  # the check's period, not a synchronization
                if self.ha.state != HAState.ACTIVE or self.qjm is not qjm:
                    return
                await self._record_committed()
                answers = await asyncio.gather(
                    *(promised(c) for c in clients), return_exceptions=True
                )
                newer = max((a for a in answers if isinstance(a, int)), default=0)
                if newer > mine and self.ha.state == HAState.ACTIVE and self.qjm is qjm:
                    self._deposed(
                        EpochError(
                            f"a JournalNode promised epoch {newer} to a newer writer; this "
                            f"NameNode writes in epoch {mine}"
                        )
                    )
                    return
        finally:
            await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)

    async def _after_deposed(self) -> None:
        async with self.transition_lock:
            await self._settle_deposed()

    async def _settle_deposed(self) -> None:
        """After being deposed: drop the writer, reload the namespace, tail (lock held)."""
        if not self._needs_reload or self.ha.state != HAState.STANDBY:
            return
        await self._record_committed()
        el, qjm = self.edit_log, self.qjm
        self.edit_log, self.qjm = None, None
        if el is not None:
            self._known_committed = max(self._known_committed, int(el.synced_txid))
            el.abort()
        if qjm is not None:
            await self._close_quietly(qjm)
        if await self._check_journal_quietly() is not None:
            # Reloading would load an image older than what was committed and follow a
            # journal that lost it: keep the namespace (unserved, as it may hold edits no
            # quorum took) until the journal holds the floor again (design §N.5).
            return
        await self._reload()
        self._needs_reload = False
        self._notify_applied()

    async def _reload(self) -> None:
        """Drop the namespace (it may hold edits no quorum took) and load it again; tail."""
        try:
            await self._load(replay=False)
        except Exception as e:
            self._fatal(f"reloading the namespace after being deposed failed: {describe_error(e)}")
            return
        self._start_tailer()
        if self.checkpointer is not None:
            self.checkpointer.resume()

    def _fatal(self, why: str) -> None:
        """Log one clear line, go STOPPING and make the daemon exit 1."""
        if self.fatal_error is not None:
            return
        self.fatal_error = why
        self.exit_code = 1
        log.error("NameNode %s: FATAL: %s; stopping (exit 1)", self.name, why)
        if self.ha.state != HAState.STOPPING:
            self.ha.move(HAState.STOPPING, why)
        self.failed.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- a journal behind this NameNode (design §N.5) ------------------------------------------
    async def journal_floor_now(self) -> Floor:
        """The highest txid this NameNode knows the shared journal committed, and how."""
        storage = self.storage
        assert storage is not None

        def name_dir_facts() -> tuple[int, int, Floor | None]:
            newest = storage.newest_image()
            try:
                seen = storage.seen_txid
            except QjmError:
                seen = 0
            local = local_floor(read_local_segments(storage.current))
            return newest[0] if newest else 0, seen, local

        image_txid, seen, local = await asyncio.to_thread(name_dir_facts)
        committed = self._known_committed
        el = self.edit_log
        if el is not None:
            committed = max(committed, int(el.synced_txid))
        return journal_floor(
            committed=committed, image_txid=image_txid, seen_txid=seen, local=local
        )

    async def _record_committed(self) -> None:
        """Record the txid a quorum acknowledged as seen_txid (best effort), so that the name
        dir alone tells a restarted NameNode what the journal committed."""
        el = self.edit_log
        if el is not None:
            await self._record_seen(int(el.synced_txid))

    async def _record_seen(self, txid: int) -> None:
        """Raise the name dir's seen_txid to txid, a txid a quorum acknowledged."""
        storage = self.storage
        if storage is None or txid <= self._seen_recorded:
            return
        try:
            await asyncio.to_thread(storage.raise_seen_txid, txid)
        except (OSError, QjmError) as e:
            log.warning(
                "NameNode %s: cannot record seen_txid %d: %s", self.name, txid, describe_error(e)
            )
            return
        self._seen_recorded = txid

    async def check_journal(self) -> str | None:
        """Ask the JournalNodes whether the shared journal ends before this NameNode's floor;
        keep the condition and return its message (None: not behind, or not known)."""
        floor = await self.journal_floor_now()
        if self._probe is None:
            self._probe = JournalEndProbe(self.uri)
        ends = await self._probe.ends(floor.txid)
        self.journal_checks += 1
        short = journal_behind(ends, floor)
        if short is not None:
            await self._journal_is_behind(floor, ends_text(short))
        elif decided(ends, len(ends), floor.txid):  # no majority can be short of it
            self._journal_caught_up(floor)
        return self.journal_behind

    async def _check_journal_quietly(self) -> str | None:
        """check_journal, with a failed check leaving the condition as it was."""
        try:
            return await self.check_journal()
        except Exception as e:
            log.debug(
                "NameNode %s: checking the shared journal's end: %s", self.name, describe_error(e)
            )
            return self.journal_behind

    async def _journal_is_behind(self, floor: Floor, journal_end: str) -> str:
        """Stop following the journal: pause the tailer, log once, keep the namespace (and
        save it as an image when it is a standby's, ahead of the name dir's newest)."""
        if self.journal_behind is not None:
            return self.journal_behind
        saved: int | None = None
        cp = self.checkpointer
        storage = self.storage
        newest = await asyncio.to_thread(storage.newest_image) if storage is not None else None
        if (
            cp is not None
            and not self._needs_reload
            and self.ha.state == HAState.STANDBY
            and self.applied_txid > (newest[0] if newest else 0)
        ):
            try:
                saved = await cp.save(purge=False)
            except Exception as e:
                log.warning(
                    "NameNode %s: cannot save its namespace: %s", self.name, describe_error(e)
                )
        message = behind_message(
            self.name, str(self.uri), floor, journal_end, self.cfg.source, saved_image=saved
        )
        if self.journal_behind is None:
            self.journal_behind = message
            log.error("NameNode %s: %s", self.name, message)
        if self.tailer is not None:
            self.tailer.pause(self.journal_behind)
        return self.journal_behind

    def _journal_caught_up(self, floor: Floor) -> None:
        """The journal holds the floor again: follow it (and reload, when deposed)."""
        if self.journal_behind is None:
            return
        self.journal_behind = None
        log.warning(
            "NameNode %s: the shared journal holds txid %d again; following it",
            self.name,
            floor.txid,
        )
        if self.tailer is not None:
            self.tailer.resume()
        if self._needs_reload:
            self._spawn(self._after_deposed())

    async def _watch_journal(self) -> None:
        """While standby: check the journal's end every JOURNAL_CHECK_S."""
        while self.ha.state != HAState.STOPPING:
            await asyncio.sleep(JOURNAL_CHECK_S)  # the check's period, not a synchronization
            if self.ha.state == HAState.STANDBY:
                await self._check_journal_quietly()

    # -- loading and tailing -------------------------------------------------------------------
    def _new_namespace_factory(self) -> Callable[..., Namespace]:
        from qjm.namenode.namespace import Namespace

        def from_image(image: Any) -> Namespace:
            return Namespace.from_image(
                image,
                superuser=self.superuser,
                supergroup=self.settings.superuser_group,
                permissions_enabled=self.settings.permissions_enabled,
            )

        return from_image

    def _load_image_file(self, path: Path) -> tuple[Namespace, int]:
        """An image file straight into a namespace (the column loader), and the image's txid."""
        from qjm.namenode.namespace import load_namespace

        ns, ns_info = load_namespace(
            path,
            superuser=self.superuser,
            supergroup=self.settings.superuser_group,
            permissions_enabled=self.settings.permissions_enabled,
        )
        return ns, ns_info.txid

    async def _load(self, replay: bool) -> None:
        """Load the newest image, then (replay) the committed shared edits after it."""
        from qjm.namenode import fs_image
        from qjm.namenode.namespace import FsLimits

        assert self.storage is not None
        storage = self.storage
        factory = self._new_namespace_factory()
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        async with self.apply_lock:
            ns, txid = await loop.run_in_executor(
                None,
                functools.partial(
                    fs_image.load_newest, storage, factory, path_loader=self._load_image_file
                ),
            )
            ns.limits = FsLimits(
                self.settings.max_component_length, self.settings.max_directory_items
            )
            self._ns = ns
            n_blocks = self.blocks.attach(ns)  # a block map of the loaded namespace (§B.14)
            self.applied_txid = self.image_txid = int(txid)
            self._notify_applied()
        log.info(
            "NameNode %s: loaded image at txid %d (%d inodes, %d blocks) in %.3fs",
            self.name,
            txid,
            len(ns),
            n_blocks,
            time.monotonic() - started,
        )
        if not replay:
            return
        if await self._check_journal_quietly() is not None:
            return  # nothing is replayed from a journal behind the name dir (design §N.5)
        started = time.monotonic()
        try:
            async with self.apply_lock:
                reader = self._journal_reader()
                async for raw in reader.read(self.applied_txid + 1, True):
                    self._apply_replayed(raw.txid, decode_op(raw))
        except (QjmError, OSError) as e:
            if self.fatal_error is not None:
                raise NameNodeStartupError(f"NameNode {self.name}: {self.fatal_error}") from None
            log.warning(
                "NameNode %s: replaying the shared edits after txid %d failed (%s); the "
                "tailer keeps trying",
                self.name,
                self.applied_txid,
                describe_error(e),
            )
            return
        log.info(
            "NameNode %s: replayed shared edits %d-%d in %.3fs",
            self.name,
            self.image_txid + 1,
            self.applied_txid,
            time.monotonic() - started,
        )

    def _apply_replayed(self, txid: int, op: Op) -> None:
        """Apply one committed op from the shared journal (start-up, tailer, catch-up)."""
        if txid <= self.applied_txid:
            return
        if txid != self.applied_txid + 1:
            raise NamenodeError(
                f"the shared journal gave txid {txid} after txid {self.applied_txid}: "
                f"txids {self.applied_txid + 1}-{txid - 1} are missing"
            )
        ns = self.ns
        try:
            ns.apply(op)
        except Exception as e:
            self._fatal(
                f"txid {txid} ({type(op).__name__}) of the shared journal cannot be applied to "
                f"the namespace at txid {self.applied_txid}: {describe_error(e)}"
            )
            raise
        self._follow_blocks(ns, op, live=False)
        self.applied_txid = txid
        if txid > self._known_committed:
            self._known_committed = txid
        self.metrics.txns_applied += 1
        if self.retry_cache is not None:
            self.retry_cache.add_op(op)  # the call it records is answered from here on
        self._notify_applied()

    def _journal_reader(self) -> QuorumJournalReader:
        if self._reader is None:
            self._reader = QuorumJournalReader(self.uri, self.cfg.qjournal, ns_info=self._ns_info())
        return self._reader

    def _start_tailer(self) -> None:
        from qjm.namenode.tailer import EditLogTailer

        if self.tailer is None:
            self.tailer = EditLogTailer(
                self._journal_reader(),
                self._apply_replayed,
                lambda: self.applied_txid,
                wait_ms=self.settings.tail_wait_ms,
                apply_lock=self.apply_lock,
                on_apply_error=lambda e: self._fatal(
                    f"the edit log tailer stopped: {describe_error(e)}"
                ),
            )
        if self.journal_behind is not None:
            self.tailer.pause(self.journal_behind)
        self.tailer.start()

    async def _stop_tailer(self) -> None:
        if self.tailer is not None:
            await self.tailer.stop()

    def _make_edit_log(self, qjm: QuorumJournalManager) -> FSEditLog:
        from qjm.namenode.edit_log import FSEditLog

        assert self.storage is not None
        el = FSEditLog(self.storage, qjm, self.settings, self._on_edit_log_failure)
        el.on_readmit_roll = self.metrics.count_readmit_roll
        return el

    async def _close_quietly(self, qjm: QuorumJournalManager) -> None:
        try:
            await qjm.close()
        except Exception as e:
            log.warning("NameNode %s: closing the journal client: %s", self.name, describe_error(e))

    # -- lifecycle -----------------------------------------------------------------------------
    def rpc_address(self) -> str:
        """host:port the RPC server listens on."""
        return format_address(self.rpc_host, self.rpc_port)

    def http_address(self) -> str:
        """host:port the HTTP server listens on."""
        return format_address(self.http_host, self.http_port)

    def https_address(self) -> str:
        """host:port the HTTPS server listens on (design §S.13)."""
        return format_address(self.https_host, self.https_port)

    def client_http_address(self) -> str:
        """host:port clients reach the HTTP server at: the HTTPS port under HTTPS_ONLY."""
        return tls.client_address(
            self.cfg.security.http_policy, self.http_address(), self.https_address()
        )

    def http_url(self) -> str:
        """Base URL clients use (https under HTTPS_ONLY)."""
        address = self.client_http_address()
        return tls.client_url(self.cfg.security.http_policy, address, address)

    def _open_storage(self) -> NNStorage:
        from qjm.namenode.storage import NNStorage

        try:
            storage = NNStorage(Path(self.conf.name_dir))
        except QjmError as e:
            raise NameNodeStartupError(f"NameNode {self.name}: {e}") from None
        for p in storage.remove_partial_uploads():
            log.info("NameNode %s: removed %s, an image upload left unfinished", self.name, p)
        return storage

    async def start(self) -> None:
        """Lock the name dir, load the namespace, become STANDBY, serve RPC and HTTP."""
        self.storage = self._open_storage()
        try:
            await self._load(replay=True)
            self.blocks.leave_safe_mode_if_met()  # no blocks to wait for: off at once (§B.14)
            self.ha.move(HAState.STANDBY, "namespace loaded")
            self._start_tailer()
            if self.settings.audit_log:
                self.audit = AuditLog(Path(self.conf.name_dir) / AUDIT_LOG)
            await self._start_rpc()
            await self._start_http()
            from qjm.namenode.checkpointer import StandbyCheckpointer

            self.checkpointer = StandbyCheckpointer(self)
            self.checkpointer.start()
            self._spawn(self._watch_journal())
            self._spawn(self._block_monitor())
            self._spawn(self.leases.monitor())
        except BaseException:
            await self.stop()
            raise
        log.info(
            "NameNode %s started: rpc=%s http=%s name_dir=%s state=%s txid=%d",
            self.name,
            self.rpc_address(),
            self.http_url(),
            self.conf.name_dir,
            self.ha.state.name,
            self.applied_txid,
        )

    async def _start_rpc(self) -> None:
        from qjm.hdfs.datanode_protocol import DATANODE_PROTOCOL
        from qjm.namenode.client_rpc import client_methods
        from qjm.namenode.datanode_rpc import datanode_methods
        from qjm.namenode.ha_rpc import ha_methods
        from qjm.namenode.protocols import CLIENT_PROTOCOL, HA_SERVICE_PROTOCOL

        s = self.settings
        security = server_security()  # under Kerberos it honours delegation tokens (§S.10)
        if security is not None:
            security = dataclasses.replace(security, tokens=self.token_password)
        server = IpcServer(
            name=f"namenode-{self.name}",
            security=security,
            state_id=self.state_id,
            max_connections=s.ipc_max_connections,
            idle_timeout_s=s.ipc_idle_timeout_ms / 1000,
            max_unfinished_bytes=s.ipc_max_unfinished_bytes,
            limit_keys=ipc_limit_keys("namenode"),
        )
        server.register(CLIENT_PROTOCOL, client_methods(self))
        server.register(HA_SERVICE_PROTOCOL, ha_methods(self))
        server.register(DATANODE_PROTOCOL, datanode_methods(self.blocks, self))
        try:
            await server.start(self.rpc_host, self.rpc_port)
        except OSError as e:
            raise NameNodeStartupError(
                f"NameNode {self.name}: cannot listen for RPC on {self.rpc_address()}: "
                f"{e.strerror or e}"
            ) from None
        self._ipc = server
        self.rpc_port = server.port

    async def _start_http(self) -> None:
        from aiohttp import web

        from qjm.namenode.http import make_app

        runner = web.AppRunner(
            make_app(self),
            access_log=None,
            handle_signals=False,
            keepalive_timeout=HTTP_IDLE_TIMEOUT_S,  # idle and half-sent connections close
            shutdown_timeout=HTTP_SHUTDOWN_SECONDS,  # a slow reader must not hold up a stop
        )
        await runner.setup()
        self._http = runner
        assert runner.server is not None
        policy, loop = self.cfg.security.http_policy, asyncio.get_running_loop()
        if tls.serves_http(policy):
            try:
                self._http_server = await loop.create_server(
                    runner.server, self.http_host, self.http_port, reuse_address=True
                )
            except OSError as e:
                raise NameNodeStartupError(
                    f"NameNode {self.name}: cannot listen for HTTP on {self.http_address()}: "
                    f"{e.strerror or e}"
                ) from None
            if self.http_port == 0:
                self.http_port = int(self._http_server.sockets[0].getsockname()[1])
        if tls.serves_https(policy):
            try:
                context = await asyncio.to_thread(tls.server_context, self.cfg.security)
                self._https_server = await loop.create_server(
                    runner.server, self.https_host, self.https_port, reuse_address=True, ssl=context
                )
            except ConfigError as e:
                raise NameNodeStartupError(f"NameNode {self.name}: {e}") from None
            except OSError as e:
                raise NameNodeStartupError(
                    f"NameNode {self.name}: cannot listen for HTTPS on {self.https_address()}: "
                    f"{e.strerror or e}"
                ) from None
            if self.https_port == 0:
                self.https_port = int(self._https_server.sockets[0].getsockname()[1])

    def ipc_stats(self) -> dict[str, int]:
        """The RPC server's counters (empty before start)."""
        return self._ipc.stats() if self._ipc is not None else {}

    async def stop(self) -> None:
        """Stop serving; an active NameNode closes its segment first (best effort)."""
        if self.ha.state != HAState.STOPPING:
            self.ha.move(HAState.STOPPING, "shut down")
        if self.checkpointer is not None:
            await self.checkpointer.stop()
        if self._ipc is not None:
            await self._ipc.stop()
            self._ipc = None
        if self.audit is not None:
            audit, self.audit = self.audit, None
            await asyncio.to_thread(audit.close)
        await self._stop_tailer()
        with contextlib.suppress(Exception):
            await self._record_committed()
        el, qjm = self.edit_log, self.qjm
        self.edit_log, self.qjm = None, None
        if el is not None:
            try:
                if self.fatal_error is None and not self._needs_reload:
                    await el.close()
                    self.applied_txid = int(el.last_txid)
                    if qjm is not None:  # STOPPING: it answers nothing as active
                        await qjm.release_lease(self.lease_s)
                else:
                    el.abort()
            except Exception as e:
                log.warning(
                    "NameNode %s: closing the edit log at stop: %s", self.name, describe_error(e)
                )
                with contextlib.suppress(Exception):
                    el.abort()
        if qjm is not None:
            await self._close_quietly(qjm)
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for srv in (self._http_server, self._https_server):
            if srv is not None:
                srv.close()
        self._http_server = self._https_server = None
        if self._http is not None:
            await self._http.cleanup()
            self._http = None
        if self._reader is not None:
            await self._reader.close()
            self._reader = None
        if self.retry_cache is not None:
            self.retry_cache.clear()  # as HDFS's stopCommonServices
        if self._probe is not None:
            await self._probe.close()
            self._probe = None
        if self.storage is not None:
            with contextlib.suppress(Exception):
                self.storage.close()
            self.storage = None


async def serve_forever(nn: NameNode, ready_file: Path | None = None) -> int:
    """Start a NameNode, report readiness, and run until SIGTERM/SIGINT or a fatal error."""
    await nn.start()
    stop = stop_on_signals()
    if ready_file is not None:
        write_ready_file(
            ready_file,
            {
                "rpc": nn.rpc_address(),
                "http": nn.client_http_address(),  # what clients use (design §S.13)
                "scheme": tls.http_scheme(nn.cfg.security.http_policy),
                "name": nn.name,
            },
        )
    stopping = asyncio.ensure_future(stop.wait())
    failing = asyncio.ensure_future(nn.failed.wait())
    await asyncio.wait([stopping, failing], return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    failing.cancel()
    log.info("NameNode %s stopping", nn.name)
    await nn.stop()
    return nn.exit_code


__all__ = ["NameNode", "NameNodeStartupError", "os_groups", "os_user", "serve_forever"]
