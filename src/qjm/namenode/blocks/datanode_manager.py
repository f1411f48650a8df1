"""DataNodes as the NameNode sees them: registration, heartbeats, liveness (design §B.5).

Pure state: the caller passes the monotonic time; nothing here does I/O. Storages get a
small integer index that the block map stores instead of the storage id string.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from qjm.namenode.blocks.errors import UnregisteredNodeError

HEARTBEAT_INTERVAL_S = 3.0  # dfs.heartbeat.interval
HEARTBEAT_RECHECK_S = 300.0  # dfs.namenode.heartbeat.recheck-interval
STALE_INTERVAL_S = 30.0  # dfs.namenode.stale.datanode.interval


class StorageType(enum.IntEnum):
    """HDFS's StorageTypeProto numbers."""

    DISK = 1
    SSD = 2
    ARCHIVE = 3
    RAM_DISK = 4
    PROVIDED = 5
    NVDIMM = 6


class StorageState(enum.IntEnum):
    """DatanodeStorage.State."""

    NORMAL = 0
    READ_ONLY_SHARED = 1
    FAILED = 2


class AdminState(enum.Enum):
    """DatanodeInfo.AdminStates (only the ones placement looks at)."""

    NORMAL = "NORMAL"
    DECOMMISSION_INPROGRESS = "DECOMMISSION_INPROGRESS"
    DECOMMISSIONED = "DECOMMISSIONED"


class ReportType(enum.Enum):
    """DatanodeReportType of getDatanodeReport."""

    ALL = "ALL"
    LIVE = "LIVE"
    DEAD = "DEAD"
    DECOMMISSIONING = "DECOMMISSIONING"


@dataclass(frozen=True, slots=True)
class DatanodeRegistration:
    """What registerDatanode carries: the node's identity and addresses."""

    uuid: str
    ip: str
    hostname: str
    xfer_port: int
    info_port: int
    ipc_port: int
    info_secure_port: int = 0  # its HTTPS port where it serves one (design §S.13)

    @property
    def xfer_addr(self) -> tuple[str, int]:
        """The data transfer address (HDFS's key for 'the same host')."""
        return (self.ip, self.xfer_port)


@dataclass(frozen=True, slots=True)
class StorageReport:
    """One storage's figures in a heartbeat (StorageReportProto)."""

    storage_id: str
    storage_type: StorageType = StorageType.DISK
    state: StorageState = StorageState.NORMAL
    capacity: int = 0
    dfs_used: int = 0
    remaining: int = 0
    block_pool_used: int = 0
    failed: bool = False


@dataclass(slots=True)
class DatanodeStorageInfo:
    """One storage of a DataNode (DatanodeStorageInfo)."""

    storage_id: str
    index: int
    node_uuid: str
    storage_type: StorageType = StorageType.DISK
    state: StorageState = StorageState.NORMAL
    capacity: int = 0
    dfs_used: int = 0
    remaining: int = 0
    block_pool_used: int = 0
    block_report_count: int = 0  # full reports since the node registered
    last_block_report_ms: int = 0  # wall clock of the last full report (0: never)
    block_contents_stale: bool = True  # no full report since this NameNode became active


@dataclass(slots=True)
class DatanodeDescriptor:
    """A registered DataNode (DatanodeDescriptor)."""

    reg: DatanodeRegistration
    last_update: float  # monotonic seconds of the last heartbeat (or registration)
    alive: bool = True
    xceiver_count: int = 0
    admin_state: AdminState = AdminState.NORMAL
    storages: dict[str, DatanodeStorageInfo] = field(default_factory=dict)
    blocks_scheduled: int = 0  # transfers and writes sent its way, not yet reported

    @property
    def uuid(self) -> str:
        """The DataNode's uuid."""
        return self.reg.uuid

    @property
    def in_service(self) -> bool:
        """Neither decommissioning nor decommissioned."""
        return self.admin_state is AdminState.NORMAL

    def reported_since_registration(self) -> bool:
        """Every storage has sent a full block report since the node registered."""
        return bool(self.storages) and all(s.block_report_count > 0 for s in self.storages.values())

    def block_contents_stale(self) -> bool:
        """Some storage has not sent a full report since this NameNode became active."""
        return any(s.block_contents_stale for s in self.storages.values())

    def capacity(self) -> int:
        """Sum of its storages' capacity."""
        return sum(s.capacity for s in self.storages.values())

    def dfs_used(self) -> int:
        """Sum of its storages' used bytes."""
        return sum(s.dfs_used for s in self.storages.values())

    def remaining(self) -> int:
        """Sum of its storages' remaining bytes."""
        return sum(s.remaining for s in self.storages.values())


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """What a registration changed: uuids whose replicas must leave the block map."""

    node: DatanodeDescriptor
    removed: tuple[str, ...]  # a different uuid that held this address, wiped
    replaced_address: bool  # the same uuid came back from another address


@dataclass(frozen=True, slots=True)
class HeartbeatDecision:
    """A heartbeat's outcome: the node must register first, or it was recorded (with the
    storages it reports failed for the first time)."""

    register: bool
    newly_failed: tuple[DatanodeStorageInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterTotals:
    """Live nodes' capacity figures (the first three of getFsStats)."""

    capacity: int
    dfs_used: int
    remaining: int
    block_pool_used: int
    live: int
    dead: int


def expiry_interval(recheck_s: float, heartbeat_s: float) -> float:
    """HDFS's heartbeat expiry: 2 * recheck + 10 * heartbeat (630 s by default)."""
    return 2 * recheck_s + 10 * heartbeat_s


class DatanodeManager:
    """The registered DataNodes, their storages and liveness (design §B.5)."""

    def __init__(
        self,
        clock: Callable[[], float],
        *,
        heartbeat_s: float = HEARTBEAT_INTERVAL_S,
        recheck_s: float = HEARTBEAT_RECHECK_S,
        stale_s: float = STALE_INTERVAL_S,
    ) -> None:
        self.clock = clock
        self.heartbeat_s = heartbeat_s
        self.expire_s = expiry_interval(recheck_s, heartbeat_s)
        self.stale_s = stale_s
        self.nodes: dict[str, DatanodeDescriptor] = {}
        self.by_xfer: dict[tuple[str, int], str] = {}
        self.storages: list[DatanodeStorageInfo] = []  # by index
        self.storage_index: dict[str, int] = {}

    # -- registration and heartbeats ------------------------------------------------------

    def register(self, reg: DatanodeRegistration) -> RegisterResult:
        """Register a DataNode (HDFS's registerDatanode rules, design §B.5)."""
        removed: list[str] = []
        other = self.by_xfer.get(reg.xfer_addr)
        if other is not None and other != reg.uuid:
            # Another node's storage used to be served from this address: HDFS removes it.
            self._wipe(other)
            removed.append(other)
        now = self.clock()
        node = self.nodes.get(reg.uuid)
        replaced = False
        if node is None:
            node = DatanodeDescriptor(reg=reg, last_update=now)
            self.nodes[reg.uuid] = node
        else:
            if node.reg.xfer_addr != reg.xfer_addr:
                replaced = True
                if self.by_xfer.get(node.reg.xfer_addr) == reg.uuid:
                    del self.by_xfer[node.reg.xfer_addr]
            node.reg = reg
            node.last_update = now
            node.alive = True
            for s in node.storages.values():
                s.block_report_count = 0  # the next report is a first report again
        self.by_xfer[reg.xfer_addr] = reg.uuid
        return RegisterResult(node=node, removed=tuple(removed), replaced_address=replaced)

    def _wipe(self, uuid: str) -> None:
        node = self.nodes.pop(uuid)
        if self.by_xfer.get(node.reg.xfer_addr) == uuid:
            del self.by_xfer[node.reg.xfer_addr]

    def get_registered(self, uuid: str) -> DatanodeDescriptor:
        """The node, alive and registered, or UnregisteredNodeError naming it."""
        node = self.nodes.get(uuid)
        if node is None:
            raise UnregisteredNodeError(f"Unregistered datanode: {uuid}")
        if not node.alive:
            raise UnregisteredNodeError(f"Datanode {uuid} is dead; it must register again")
        return node

    def heartbeat(
        self, uuid: str, reports: Iterable[StorageReport], xceiver_count: int
    ) -> HeartbeatDecision:
        """Record a heartbeat; an unknown or dead node is told to register."""
        node = self.nodes.get(uuid)
        if node is None or not node.alive:
            return HeartbeatDecision(register=True)
        node.last_update = self.clock()
        node.xceiver_count = max(0, xceiver_count)
        failed = []
        for r in reports:
            was_failed = (st := node.storages.get(r.storage_id)) is not None and (
                st.state is StorageState.FAILED
            )
            st = self.update_storage(node, r)
            if st.state is StorageState.FAILED and not was_failed:
                failed.append(st)
        return HeartbeatDecision(register=False, newly_failed=tuple(failed))

    def update_storage(self, node: DatanodeDescriptor, r: StorageReport) -> DatanodeStorageInfo:
        """Add or update one storage of node from a report; returns it."""
        st = node.storages.get(r.storage_id)
        if st is None:
            st = self._storage(r.storage_id, node.uuid)
            node.storages[r.storage_id] = st
        st.storage_type = r.storage_type
        st.state = StorageState.FAILED if r.failed else r.state
        st.capacity, st.dfs_used = max(0, r.capacity), max(0, r.dfs_used)
        st.remaining, st.block_pool_used = max(0, r.remaining), max(0, r.block_pool_used)
        return st

    def _storage(self, storage_id: str, uuid: str) -> DatanodeStorageInfo:
        idx = self.storage_index.get(storage_id)
        if idx is None:
            idx = len(self.storages)
            self.storage_index[storage_id] = idx
            self.storages.append(DatanodeStorageInfo(storage_id, idx, uuid))
        st = self.storages[idx]
        if st.node_uuid != uuid:
            # The storage moved to another node (its disk was moved): a fresh record.
            st = DatanodeStorageInfo(storage_id, idx, uuid)
            self.storages[idx] = st
        return st

    def storage_of(self, node: DatanodeDescriptor, storage_id: str) -> DatanodeStorageInfo:
        """node's storage by id, created if the node reports it before a heartbeat did."""
        st = node.storages.get(storage_id)
        if st is None:
            st = self.update_storage(node, StorageReport(storage_id))
        return st

    def node_of_storage(self, index: int) -> DatanodeDescriptor | None:
        """The node currently holding the storage at index, if registered."""
        node = self.nodes.get(self.storages[index].node_uuid)
        if (
            node is None
            or node.storages.get(self.storages[index].storage_id) is not (self.storages[index])
        ):
            return None
        return node

    # -- liveness ----------------------------------------------------------------------

    def is_dead(self, node: DatanodeDescriptor) -> bool:
        """No heartbeat for the expiry interval (or already marked dead)."""
        return not node.alive or node.last_update < self.clock() - self.expire_s

    def is_stale(self, node: DatanodeDescriptor) -> bool:
        """No heartbeat for the stale interval (HDFS's stale DataNode)."""
        return node.last_update < self.clock() - self.stale_s

    def expire_dead(self) -> list[DatanodeDescriptor]:
        """Mark nodes past the expiry interval dead; returns the newly dead (HeartbeatManager)."""
        out = []
        for node in self.nodes.values():
            if node.alive and self.is_dead(node):
                node.alive = False
                out.append(node)
        return out

    def live_nodes(self) -> list[DatanodeDescriptor]:
        """Registered nodes that are alive."""
        return [n for n in self.nodes.values() if n.alive and not self.is_dead(n)]

    def datanode_report(self, kind: ReportType) -> list[DatanodeDescriptor]:
        """getDatanodeReport: ALL, LIVE, DEAD or live DECOMMISSIONING nodes, by uuid."""
        out = []
        for n in sorted(self.nodes.values(), key=lambda d: d.uuid):
            dead = self.is_dead(n)
            if kind is ReportType.DECOMMISSIONING:
                if not dead and n.admin_state is AdminState.DECOMMISSION_INPROGRESS:
                    out.append(n)
            elif kind is ReportType.ALL or (kind is ReportType.DEAD) == dead:
                out.append(n)
        return out

    def totals(self) -> ClusterTotals:
        """Capacity, used and remaining over live nodes (getFsStats' first fields)."""
        live = self.live_nodes()
        return ClusterTotals(
            capacity=sum(n.capacity() for n in live),
            dfs_used=sum(n.dfs_used() for n in live),
            remaining=sum(n.remaining() for n in live),
            block_pool_used=sum(s.block_pool_used for n in live for s in n.storages.values()),
            live=len(live),
            dead=len(self.nodes) - len(live),
        )

    def mark_all_stale(self) -> None:
        """On becoming active: every storage's contents are stale until it reports (§B.6)."""
        for node in self.nodes.values():
            for s in node.storages.values():
                s.block_contents_stale = True
