"""BPOfferService and BPServiceActor: a DataNode's DatanodeProtocol to every NameNode.

One actor per NameNode of the nameservice (design §B.11): versionRequest (a NameNode of
another cluster or block pool is refused), registerDatanode, then a loop of heartbeats
carrying storage reports, incremental reports sent as soon as a replica is received or
deleted, a full block report after each registration and periodically, and the queued
error and bad-block reports. A NameNode that does not answer is retried with exponential
backoff; the other actors go on. The BPOfferService holds what the actors share: the block
pool's namespace, and which NameNode is obeyed (design §B.12, decisions.py). Commands it
accepts go to a CommandHandler; the storage facts come from a DataNodeFacts: both are
Protocols the DataNode daemon implements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from qjm.config import ClusterConfig, DataNodeSettings
from qjm.datanode.decisions import (
    ActiveClaims,
    Backoff,
    Claim,
    Disposition,
    command_disposition,
    report_due,
    update_from_heartbeat,
)
from qjm.errors import ConfigError, QjmError, describe_error
from qjm.hdfs import datanode_protocol as wire
from qjm.hdfs.datanode_protocol import (
    DATANODE_PROTOCOL,
    DISALLOWED_DATANODE,
    INCORRECT_VERSION,
    UNREGISTERED_NODE,
    BadBlock,
    Block,
    BlockReportContext,
    BlockStatus,
    BlockSynchronization,
    Counter,
    DatanodeCommand,
    DatanodeId,
    DatanodeRegistration,
    DatanodeStorage,
    ErrorCode,
    FinalizeCommand,
    HAState,
    HAStatus,
    HeartbeatFacts,
    IncorrectVersionError,
    InvalidateCommand,
    KeyUpdateCommand,
    NamespaceInfo,
    OtherCommand,
    ReceivedDeletedBlock,
    RecoveryCommand,
    RegisterCommand,
    StorageBlockReport,
    StorageInfo,
    StorageReceivedDeleted,
    TransferCommand,
)
from qjm.hdfs.proto import DatanodeProtocol_pb2 as dnp
from qjm.hdfs.proto import HdfsServer_pb2 as srv
from qjm.ipc import IpcClient, RemoteError, RpcError
from qjm.security.block_token import ExportedKeys

log = logging.getLogger(__name__)

# Remote errors after which an actor gives up on its NameNode (HDFS's BPServiceActor too).
_FATAL_REMOTE = frozenset({DISALLOWED_DATANODE, INCORRECT_VERSION})


class DataNodeFacts(Protocol):
    """What the actors need of the DataNode's storage."""

    def datanode_id(self) -> DatanodeId:
        """This DataNode's identity (address, uuid, ports)."""
        ...

    async def init_block_pool(self, namespace: NamespaceInfo) -> StorageInfo:
        """Load or format the block pool's storage; this DataNode's StorageInfo for it.

        Raises (a QjmError naming both ids) when the storage belongs to another cluster.
        """
        ...

    def heartbeat_facts(self, pool_id: str) -> HeartbeatFacts:
        """Storage reports and load for a heartbeat (cheap: no disk scan)."""
        ...

    async def block_reports(self, pool_id: str) -> list[StorageBlockReport]:
        """Every replica of the pool, one report per storage (disk work off the loop)."""
        ...


class CommandHandler(Protocol):
    """Carries out the commands of the obeyed NameNode; each returns once it is queued."""

    async def transfer(self, command: TransferCommand) -> None:
        """Copy replicas to other DataNodes."""
        ...

    async def invalidate(self, command: InvalidateCommand) -> None:
        """Delete replicas."""
        ...

    async def recover(self, command: RecoveryCommand) -> None:
        """Recover blocks under new generation stamps."""
        ...

    async def finalize(self, command: FinalizeCommand) -> None:
        """Finalize the block pool's upgrade."""
        ...

    def add_block_keys(self, pool_id: str, keys: ExportedKeys) -> None:
        """Take a NameNode's block keys (design §S.9), from any NameNode."""
        ...


@dataclass(frozen=True)
class BPServiceSettings:
    """The actors' timing and limits, with HDFS's defaults."""

    heartbeat_interval_s: float = 3.0  # dfs.heartbeat.interval
    block_report_interval_s: float = 6 * 3600.0  # dfs.blockreport.intervalMsec
    ibr_interval_s: float = 0.0  # dfs.blockreport.incremental.intervalMsec: batch window
    split_threshold: int = 1_000_000  # dfs.blockreport.split.threshold (replicas per RPC)
    rpc_timeout_s: float = 60.0  # each DatanodeProtocol call
    backoff_initial_s: float = 1.0  # first wait after a NameNode did not answer
    backoff_max_s: float = 10.0  # longest wait between tries
    max_pending_changes: int = 100_000  # incremental changes queued per NameNode
    max_pending_reports: int = 1_000  # error and bad-block reports queued per NameNode

    def __post_init__(self) -> None:
        for name in ("heartbeat_interval_s", "block_report_interval_s", "rpc_timeout_s"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"datanode {name} must be above 0, got {getattr(self, name)}")
        if self.backoff_initial_s <= 0 or self.backoff_max_s < self.backoff_initial_s:
            raise ConfigError(
                f"datanode backoff: initial {self.backoff_initial_s} s must be above 0 and "
                f"at most the maximum {self.backoff_max_s} s"
            )


def settings_from_config(settings: DataNodeSettings) -> BPServiceSettings:
    """The actors' settings from the config's [datanode] section."""
    return BPServiceSettings(
        heartbeat_interval_s=settings.heartbeat_interval_ms / 1000,
        block_report_interval_s=settings.block_report_interval_ms / 1000,
        ibr_interval_s=settings.incremental_report_delay_ms / 1000,
        rpc_timeout_s=settings.socket_timeout_ms / 1000,
    )


def namenode_addresses(cfg: ClusterConfig) -> dict[str, str]:
    """Every NameNode of the nameservice by name, with the RPC address a DataNode calls."""
    if not cfg.namenodes:
        raise ConfigError(f"{cfg.nameservice}: the config names no NameNode ([namenodes.<name>])")
    return {name: nn.rpc_address for name, nn in cfg.namenodes.items()}


class ActorFailedError(QjmError):
    """This actor gives up on its NameNode (another cluster, or refused for good)."""


class _Reregister(Exception):
    """The NameNode asked this DataNode to register again."""


def _kind(command: DatanodeCommand) -> str:
    if isinstance(command, TransferCommand):
        return "transfer"
    if isinstance(command, InvalidateCommand):
        return "invalidate"
    if isinstance(command, RecoveryCommand):
        return "recover"
    if isinstance(command, FinalizeCommand):
        return "finalize"
    if isinstance(command, RegisterCommand):
        return "register"
    if isinstance(command, KeyUpdateCommand):
        return "key_update"
    return command.kind


class BPOfferService:
    """The actors of one block pool (one per NameNode) and what they share."""

    def __init__(
        self,
        namenodes: Mapping[str, str],
        facts: DataNodeFacts,
        handler: CommandHandler,
        settings: BPServiceSettings | None = None,
        *,
        user: str | None = None,
    ) -> None:
        if not namenodes:
            raise QjmError("a DataNode needs at least one NameNode to report to")
        self.facts = facts
        self.handler = handler
        self.settings = settings or BPServiceSettings()
        self.namespace: NamespaceInfo | None = None  # the pool's, from the first NameNode
        self.storage_info: StorageInfo | None = None
        self.claims = ActiveClaims()
        self.counters = Counter()
        self._pool_lock = asyncio.Lock()
        self.actors = {
            name: BPServiceActor(self, name, address, user=user)
            for name, address in namenodes.items()
        }

    # ---- life -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every actor."""
        for actor in self.actors.values():
            actor.start()

    async def stop(self) -> None:
        """Stop every actor and close its connection."""
        await asyncio.gather(*(a.stop() for a in self.actors.values()))

    # ---- what the DataNode tells the NameNodes ----------------------------------------

    def notify_receiving(self, block: Block, storage: DatanodeStorage) -> None:
        """A replica started being written (RECEIVING)."""
        self._notify(ReceivedDeletedBlock(block, BlockStatus.RECEIVING), storage)

    def notify_received(
        self, block: Block, storage: DatanodeStorage, delete_hint: str = ""
    ) -> None:
        """A replica was finalized (RECEIVED): every NameNode hears of it at once."""
        self._notify(ReceivedDeletedBlock(block, BlockStatus.RECEIVED, delete_hint), storage)

    def notify_deleted(self, block: Block, storage: DatanodeStorage) -> None:
        """A replica was deleted (DELETED)."""
        self._notify(ReceivedDeletedBlock(block, BlockStatus.DELETED), storage)

    def _notify(self, change: ReceivedDeletedBlock, storage: DatanodeStorage) -> None:
        for actor in self.actors.values():
            actor.add_change(change, storage)

    def report_bad_blocks(self, bad: Sequence[BadBlock]) -> None:
        """Tell every NameNode of corrupt replicas."""
        for actor in self.actors.values():
            actor.add_bad_blocks(bad)

    def error_report(self, code: ErrorCode, message: str) -> None:
        """Tell every NameNode of an error (a failed disk, an invalid block)."""
        for actor in self.actors.values():
            actor.add_error(code, message)

    def trigger_block_report(self) -> None:
        """Send a full block report to every NameNode now."""
        for actor in self.actors.values():
            actor.schedule_report()

    async def commit_block_synchronization(self, sync: BlockSynchronization) -> None:
        """Commit a block recovery at the obeyed active NameNode."""
        active = self.claims.active
        if active is None:
            raise QjmError(
                f"commitBlockSynchronization of block {sync.block.block_id}: no active "
                "NameNode is known"
            )
        await self.actors[active].call(
            "commitBlockSynchronization",
            wire.block_sync_to_proto(sync),
            dnp.CommitBlockSynchronizationResponseProto,
        )

    # ---- rules shared by the actors ---------------------------------------------------

    async def verify_namespace(self, actor: BPServiceActor, ns: NamespaceInfo) -> StorageInfo:
        """Check a NameNode's namespace against the pool's; this DataNode's StorageInfo.

        The first NameNode to answer sets up the pool's storage; every other one must serve
        the same block pool of the same cluster and namespace (HDFS's
        verifyAndSetNamespaceInfo), else it is refused for good.
        """
        async with self._pool_lock:
            known = self.namespace
            if known is None:
                self.storage_info = await self.facts.init_block_pool(ns)
                self.namespace = ns
                log.info(
                    "block pool %s of cluster %s (namespace %d) from NameNode %s",
                    ns.block_pool_id,
                    ns.storage.cluster_id,
                    ns.storage.namespace_id,
                    actor.name,
                )
            elif (
                known.block_pool_id,
                known.storage.cluster_id,
                known.storage.namespace_id,
            ) != (ns.block_pool_id, ns.storage.cluster_id, ns.storage.namespace_id):
                raise IncorrectVersionError(
                    f"NameNode {actor.name} at {actor.address} serves block pool "
                    f"{ns.block_pool_id} of cluster {ns.storage.cluster_id} (namespace "
                    f"{ns.storage.namespace_id}), but this DataNode serves block pool "
                    f"{known.block_pool_id} of cluster {known.storage.cluster_id} (namespace "
                    f"{known.storage.namespace_id}): it is not a NameNode of this "
                    "nameservice, so it is refused"
                )
            assert self.storage_info is not None
            return self.storage_info

    def on_heartbeat(self, actor: BPServiceActor, status: HAStatus) -> Claim:
        """Update which NameNode is obeyed from one heartbeat answer (design §B.12)."""
        before = self.claims
        self.claims, claim = update_from_heartbeat(
            before, actor.name, status.state == HAState.ACTIVE, status.txid
        )
        if claim == Claim.ACKNOWLEDGED:
            if before.active is None:
                log.info("acknowledging NameNode %s as active at txid %d", actor.name, status.txid)
            else:
                log.info(
                    "NameNode %s takes over as active from %s at higher txid %d (was %d)",
                    actor.name,
                    before.active,
                    status.txid,
                    before.last_claim_txid,
                )
            self.counters.add("active_changes")
            if actor.last_report is not None:
                # A new active holds every storage's contents stale, and postpones deleting
                # excess or corrupt replicas, until each reports again (design §B.6): it
                # hears now, not at the next report hours later.
                actor.schedule_report()
        elif claim == Claim.STALE:
            self.counters.add("stale_active_claims")
            log.warning(
                "NameNode %s claims ACTIVE at txid %d, but an active claim was seen at txid "
                "%d: ignoring it and its commands",
                actor.name,
                status.txid,
                before.last_claim_txid,
            )
        elif claim == Claim.RELINQUISHED:
            log.info("NameNode %s relinquishes ACTIVE at txid %d", actor.name, status.txid)
            self.counters.add("active_changes")
        return claim

    async def process_command(self, actor: BPServiceActor, command: DatanodeCommand) -> None:
        """Carry out, drop or log one command from actor's NameNode (design §B.12).

        Raises _Reregister for a RegisterCommand (the actor registers again).
        """
        kind = _kind(command)
        disposition = command_disposition(self.claims, actor.name, kind)
        if disposition == Disposition.REREGISTER:
            raise _Reregister()
        if disposition == Disposition.KEYS:
            assert isinstance(command, KeyUpdateCommand)
            self.take_keys(actor, command.keys)
            return
        if disposition == Disposition.DROP_STANDBY:
            self.counters.add("commands_dropped_not_active")
            log.warning(
                "dropping a %s command from NameNode %s: it is not the active one (the "
                "active is %s)",
                kind,
                actor.name,
                self.claims.active or "unknown",
            )
            return
        if disposition == Disposition.UNSUPPORTED:
            assert isinstance(command, OtherCommand)
            self.counters.add("commands_unsupported")
            log.warning(
                "ignoring a %s command from NameNode %s: qjm's DataNode does not carry it out%s",
                command.kind,
                actor.name,
                f" ({command.detail})" if command.detail else "",
            )
            return
        self.counters.add(f"commands_{kind}")
        try:
            if isinstance(command, TransferCommand):
                await self.handler.transfer(command)
            elif isinstance(command, InvalidateCommand):
                await self.handler.invalidate(command)
            elif isinstance(command, RecoveryCommand):
                await self.handler.recover(command)
            elif isinstance(command, FinalizeCommand):
                await self.handler.finalize(command)
        except Exception as e:  # one command's failure must not stop the actor
            self.counters.add("commands_failed")
            log.error(
                "%s command from NameNode %s failed: %s",
                kind,
                actor.name,
                describe_error(e),
                exc_info=not isinstance(e, QjmError),
            )

    def take_keys(self, actor: BPServiceActor, keys: ExportedKeys | None) -> None:
        """A NameNode's block keys, from its registration or a KeyUpdateCommand."""
        ns = self.namespace
        if keys is None or ns is None:
            return
        self.counters.add("key_updates")
        log.info("block keys from NameNode %s (current key %d)", actor.name, keys.current.key_id)
        self.handler.add_block_keys(ns.block_pool_id, keys)

    def status(self) -> dict[str, Any]:
        """The pool, the obeyed NameNode, counters and each actor's state (for /status)."""
        ns = self.namespace
        return {
            "block_pool_id": ns.block_pool_id if ns else None,
            "cluster_id": ns.storage.cluster_id if ns else None,
            "active_namenode": self.claims.active,
            "last_active_claim_txid": self.claims.last_claim_txid,
            "counters": dict(self.counters.counts),
            "namenodes": {name: a.status() for name, a in self.actors.items()},
        }


class BPServiceActor:
    """The DataNode's conversation with one NameNode."""

    def __init__(
        self, bpos: BPOfferService, name: str, address: str, *, user: str | None = None
    ) -> None:
        self.bpos = bpos
        self.name = name
        self.address = address
        s = bpos.settings
        self.client = IpcClient(
            address,
            DATANODE_PROTOCOL,
            user=user,
            connect_timeout_s=min(5.0, s.rpc_timeout_s),
            reconnect_attempts=1,
        )
        self.backoff = Backoff(s.backoff_initial_s, s.backoff_max_s)
        self.state = "new"
        self.registration: DatanodeRegistration | None = None
        self.last_error = ""
        self.last_ha: HAStatus | None = None
        self.counters = Counter()
        self.last_heartbeat: float | None = None  # loop time of the last answered heartbeat
        self.last_report: float | None = None  # loop time of the last full report
        self._failures = 0
        self._changes: dict[str, tuple[DatanodeStorage, dict[int, ReceivedDeletedBlock]]] = {}
        self._pending_changes = 0
        self._bad: list[BadBlock] = []
        self._errors: list[tuple[ErrorCode, str]] = []
        self._report_wanted = True
        self._lease_id = 0
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the actor's loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"bp-actor-{self.name}"
            )

    async def stop(self) -> None:
        """Stop the loop (an RPC in flight is cancelled) and close the connection."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.client.close()
        self.state = "stopped"

    # ---- queues -----------------------------------------------------------------------

    def add_change(self, change: ReceivedDeletedBlock, storage: DatanodeStorage) -> None:
        """Queue an incremental change; a later change of the same block replaces it."""
        if self.state == "failed":
            return
        _, per_block = self._changes.setdefault(storage.storage_uuid, (storage, {}))
        if change.block.block_id not in per_block:
            self._pending_changes += 1
        per_block[change.block.block_id] = change
        if self._pending_changes > self.bpos.settings.max_pending_changes:
            # the NameNode has been away long: the full report after it is back says it all
            log.warning(
                "NameNode %s: over %d incremental changes queued; dropping them for a full "
                "block report",
                self.name,
                self.bpos.settings.max_pending_changes,
            )
            self._changes.clear()
            self._pending_changes = 0
            self._report_wanted = True
        self._wake.set()

    def add_bad_blocks(self, bad: Sequence[BadBlock]) -> None:
        """Queue corrupt replicas to report."""
        room = self.bpos.settings.max_pending_reports - len(self._bad)
        if room < len(bad):
            self.counters.add("bad_block_reports_dropped", len(bad) - max(room, 0))
        self._bad.extend(bad[: max(room, 0)])
        self._wake.set()

    def add_error(self, code: ErrorCode, message: str) -> None:
        """Queue an error report."""
        if len(self._errors) >= self.bpos.settings.max_pending_reports:
            self.counters.add("error_reports_dropped")
            return
        self._errors.append((code, message))
        self._wake.set()

    def schedule_report(self) -> None:
        """Send a full block report at the next turn."""
        self._report_wanted = True
        self._wake.set()

    # ---- the loop ---------------------------------------------------------------------

    async def call(self, method: str, request: Any, response_type: type[Any]) -> Any:
        """One DatanodeProtocol call to this actor's NameNode, bounded by the RPC timeout."""
        return await self.client.call(
            method, request, response_type, timeout=self.bpos.settings.rpc_timeout_s
        )

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                if self.registration is None:
                    await self._handshake()
                await self._turn(loop)
                self._failures = 0
            except ActorFailedError as e:
                self.state = "failed"
                self.last_error = str(e)
                log.error("giving up on NameNode %s at %s: %s", self.name, self.address, e)
                return
            except _Reregister:
                self.counters.add("reregistrations")
                log.info("NameNode %s asks this DataNode to register again", self.name)
                self.registration = None
            except (RpcError, QjmError, OSError) as e:
                if isinstance(e, RemoteError) and e.class_name == UNREGISTERED_NODE:
                    self.counters.add("reregistrations")
                    log.warning(
                        "NameNode %s does not know this DataNode: registering again (%s)",
                        self.name,
                        e.brief,
                    )
                    self.registration = None
                    if self._failures == 0:
                        self._failures = 1
                        continue
                self._failures += 1
                self.last_error = describe_error(e, brief=True)
                delay = self.backoff.delay(self._failures)
                self.state = "backoff"
                self.counters.add("failures")
                log.warning(
                    "NameNode %s at %s: %s; trying again in %.1f s (failure %d in a row)",
                    self.name,
                    self.address,
                    self.last_error,
                    delay,
                    self._failures,
                )
                await asyncio.sleep(delay)

    async def _handshake(self) -> None:
        """versionRequest, check the namespace, registerDatanode."""
        self.state = "connecting"
        try:
            answer = await self.call(
                "versionRequest", srv.VersionRequestProto(), srv.VersionResponseProto
            )
        except RemoteError as e:
            if e.class_name in _FATAL_REMOTE:
                raise ActorFailedError(e.brief) from None
            raise
        ns = wire.namespace_info_from_proto(answer.info)
        try:
            storage = await self.bpos.verify_namespace(self, ns)
        except IncorrectVersionError as e:
            raise ActorFailedError(str(e)) from None
        except (QjmError, OSError) as e:  # the storage refused the pool (another cluster)
            raise ActorFailedError(
                f"block pool {ns.block_pool_id} of cluster {ns.storage.cluster_id} from "
                f"NameNode {self.name}: {describe_error(e)}"
            ) from None
        reg = DatanodeRegistration(self.bpos.facts.datanode_id(), storage)
        self.state = "registering"
        try:
            reply = await self.call(
                "registerDatanode",
                dnp.RegisterDatanodeRequestProto(registration=wire.registration_to_proto(reg)),
                dnp.RegisterDatanodeResponseProto,
            )
        except RemoteError as e:
            if e.class_name in _FATAL_REMOTE:
                raise ActorFailedError(e.brief) from None
            raise
        taken = wire.registration_from_proto(reply.registration)
        self.bpos.take_keys(self, taken.keys)  # HDFS's registrationSucceeded
        self.registration = dataclasses.replace(taken, keys=None)  # not sent back
        self.counters.add("registrations")
        self.state = "running"
        self._report_wanted = True  # HDFS schedules a full report after each registration
        log.info(
            "registered with NameNode %s at %s as %s",
            self.name,
            self.address,
            self.registration.datanode.datanode_uuid,
        )

    async def _turn(self, loop: asyncio.AbstractEventLoop) -> None:
        """One turn: heartbeat when due, queued reports, a full report when due, then wait."""
        s = self.bpos.settings
        now = loop.time()
        if self.last_heartbeat is None or now - self.last_heartbeat >= s.heartbeat_interval_s:
            await self._heartbeat(loop)
        if self._changes:
            await self._send_changes()
        if self._bad:
            await self._send_bad_blocks()
        if self._errors:
            await self._send_errors()
        if self._report_wanted or report_due(
            loop.time(), self.last_report, s.block_report_interval_s
        ):
            await self._full_report(loop)
        wait = s.heartbeat_interval_s - (loop.time() - (self.last_heartbeat or 0.0))
        if wait > 0 and not self._wake.is_set():
            try:
                async with asyncio.timeout(wait):
                    await self._wake.wait()
            except TimeoutError:
                pass
        if self._wake.is_set() and s.ibr_interval_s > 0:
            await asyncio.sleep(s.ibr_interval_s)  # let a burst of changes batch
        self._wake.clear()

    def _registration_proto(self) -> dnp.DatanodeRegistrationProto:
        assert self.registration is not None
        return wire.registration_to_proto(self.registration)

    async def _heartbeat(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self.registration is not None
        ns = self.bpos.namespace
        assert ns is not None
        facts = self.bpos.facts.heartbeat_facts(ns.block_pool_id)
        request = wire.heartbeat_to_proto(self.registration, facts)
        request.requestFullBlockReportLease = self._report_wanted
        reply = await self.call("sendHeartbeat", request, dnp.HeartbeatResponseProto)
        answer = wire.heartbeat_answer_from_proto(reply)
        self.last_heartbeat = loop.time()
        self.last_ha = answer.ha_status
        self._lease_id = answer.full_block_report_lease_id
        self.counters.add("heartbeats")
        self.bpos.on_heartbeat(self, answer.ha_status)
        for command in answer.commands:
            await self.bpos.process_command(self, command)

    async def _send_changes(self) -> None:
        ns = self.bpos.namespace
        assert ns is not None
        taken, self._changes = self._changes, {}
        count, self._pending_changes = self._pending_changes, 0
        request = dnp.BlockReceivedAndDeletedRequestProto(
            registration=self._registration_proto(), blockPoolId=ns.block_pool_id
        )
        request.blocks.extend(
            wire.received_deleted_to_proto(StorageReceivedDeleted(storage, tuple(per.values())))
            for storage, per in taken.values()
        )
        try:
            await self.call(
                "blockReceivedAndDeleted", request, dnp.BlockReceivedAndDeletedResponseProto
            )
        except BaseException:
            self._put_back(taken)
            raise
        self.counters.add("incremental_reports")
        self.counters.add("incremental_changes", count)

    def _put_back(
        self, taken: dict[str, tuple[DatanodeStorage, dict[int, ReceivedDeletedBlock]]]
    ) -> None:
        """Queue again the changes a failed report carried, unless newer ones replaced them."""
        for uuid, (storage, per) in taken.items():
            _, now = self._changes.setdefault(uuid, (storage, {}))
            for block_id, change in per.items():
                if block_id not in now:
                    now[block_id] = change
                    self._pending_changes += 1

    async def _send_bad_blocks(self) -> None:
        bad, self._bad = self._bad, []
        request = dnp.ReportBadBlocksRequestProto()
        request.blocks.extend(wire.bad_block_to_proto(b) for b in bad)
        try:
            await self.call("reportBadBlocks", request, dnp.ReportBadBlocksResponseProto)
        except BaseException:
            self._bad[:0] = bad
            raise
        self.counters.add("bad_blocks_reported", len(bad))

    async def _send_errors(self) -> None:
        while self._errors:
            code, message = self._errors[0]
            await self.call(
                "errorReport",
                dnp.ErrorReportRequestProto(
                    registartion=self._registration_proto(), errorCode=int(code), msg=message
                ),
                dnp.ErrorReportResponseProto,
            )
            self._errors.pop(0)
            self.counters.add("error_reports")

    async def _full_report(self, loop: asyncio.AbstractEventLoop) -> None:
        ns = self.bpos.namespace
        assert ns is not None
        s = self.bpos.settings
        started = time.monotonic()
        reports = await self.bpos.facts.block_reports(ns.block_pool_id)
        rpcs = wire.split_reports(reports, s.split_threshold)
        report_id = random.getrandbits(63)
        for i, part in enumerate(rpcs):
            request = dnp.BlockReportRequestProto(
                registration=self._registration_proto(),
                blockPoolId=ns.block_pool_id,
                context=wire.context_to_proto(
                    BlockReportContext(len(rpcs), i, report_id, self._lease_id)
                ),
            )
            request.reports.extend(
                wire.storage_block_report_to_proto(r, ns.reads_buffers) for r in part
            )
            reply = await self.call("blockReport", request, dnp.BlockReportResponseProto)
            if reply.HasField("cmd"):
                await self.bpos.process_command(self, wire.command_from_proto(reply.cmd))
        self._report_wanted = False
        self.last_report = loop.time()
        self.counters.add("full_reports")
        log.info(
            "full block report to NameNode %s: %d replicas on %d storages in %d RPC(s), %.3f s",
            self.name,
            wire.replicas_of(reports),
            len(reports),
            len(rpcs),
            time.monotonic() - started,
        )

    def status(self) -> dict[str, Any]:
        """This actor's state, its NameNode's last HA status and counters."""
        ha = self.last_ha
        return {
            "address": self.address,
            "state": self.state,
            "registered": self.registration is not None,
            "ha_state": ha.state.name if ha else None,
            "txid": ha.txid if ha else None,
            "failures_in_a_row": self._failures,
            "last_error": self.last_error,
            "pending_changes": self._pending_changes,
            "counters": dict(self.counters.counts),
        }
