"""Prometheus metrics of a NameNode (qjm_namenode_*), read from the NameNode at scrape time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from qjm import __version__
from qjm.ipc.metrics import rpc_families
from qjm.namenode.types import HAState

if TYPE_CHECKING:
    from qjm.namenode.server import NameNode


class NameNodeCollector(Collector):
    """One family per metric; values read from the NameNode when scraped."""

    def __init__(self, nn: NameNode, metrics: NameNodeMetrics) -> None:
        self.nn = nn
        self.m = metrics

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """Yield the NameNode's gauges and counters."""
        nn = self.nn
        state = GaugeMetricFamily(
            "qjm_namenode_ha_state", "1 for the current HA state", labels=["state"]
        )
        for s in HAState:
            state.add_metric([s.name.lower()], 1 if nn.ha_state == s else 0)
        yield state

        def gauge(name: str, text: str, value: float) -> GaugeMetricFamily:
            g = GaugeMetricFamily(f"qjm_namenode_{name}", text)
            g.add_metric([], value)
            return g

        def counter(name: str, text: str, value: float) -> CounterMetricFamily:
            c = CounterMetricFamily(f"qjm_namenode_{name}", text)
            c.add_metric([], value)
            return c

        yield gauge("last_applied_txid", "Newest txid applied to the namespace", nn.last_txid())
        synced = nn.synced_txid()
        yield (
            gauge("last_synced_txid", "Newest txid the quorum holds (active only; else -1)", -1)
            if synced is None
            else gauge(
                "last_synced_txid", "Newest txid the quorum holds (active only; else -1)", synced
            )
        )
        ns = nn._ns
        files = dirs = size = inodes = 0
        if ns is not None:
            files, dirs, size = ns.totals()
            inodes = len(ns)
        yield gauge("inodes", "Inodes in the namespace, the root included", inodes)
        yield gauge("files", "Files in the namespace (HDFS FilesTotal)", files)
        yield gauge("directories", "Directories in the namespace", dirs)
        yield gauge("bytes", "Bytes of all files' blocks", size)
        cp = nn.checkpointer
        yield gauge(
            "last_checkpoint_txid", "Txid of the newest image in the name dir", nn.image_txid
        )
        yield gauge(
            "epoch", "Writer epoch while active (0 otherwise)", (nn.qjm.epoch or 0) if nn.qjm else 0
        )
        tailer = nn.tailer
        yield gauge(
            "tailer_running",
            "1 while the edit log tailer runs",
            1 if tailer and tailer.running else 0,
        )
        yield gauge(
            "journal_behind",
            "1 while the shared journal ends before what this NameNode knows it committed",
            1 if nn.journal_behind is not None else 0,
        )
        yield counter(
            "journal_checks_total",
            "Checks of the shared journal's end against this NameNode's floor",
            nn.journal_checks,
        )
        yield counter(
            "txns_applied_total", "Txns applied from the shared journal", self.m.txns_applied
        )
        yield counter(
            "checkpoints_total", "Images saved by the checkpointer", cp.checkpoints if cp else 0
        )
        yield counter(
            "images_uploaded_total", "Images uploaded to another NameNode", cp.uploads if cp else 0
        )
        yield counter(
            "images_received_total", "Images received over /imagetransfer", self.m.images_received
        )
        yield counter(
            "images_refused_too_large_total",
            "Image uploads refused past namenode.image_upload_max_bytes",
            self.m.images_refused_too_large,
        )
        yield counter("ha_transitions_total", "HA state changes", nn.ha.transitions)
        cache = nn.retry_cache.stats() if nn.retry_cache is not None else {}
        for key, name, text in (
            ("CacheHit", "hit", "calls that found their entry"),
            ("CacheUpdated", "updated", "entries added, by a call or from the journal"),
            ("CacheCleared", "cleared", "times the cache was emptied"),
        ):
            yield counter(
                f"retry_cache_{name}_total",
                f"Retry cache: {text} (HDFS RetryCache.NameNodeRetryCache {key})",
                cache.get(key, 0),
            )
        yield counter(
            "retry_cache_evicted_total",
            "Retry cache entries dropped for room before they expired",
            cache.get("evicted", 0),
        )
        yield gauge("retry_cache_entries", "Retry cache entries held", cache.get("entries", 0))
        left = nn.lease_left_s()
        yield gauge(
            "active_lease_left_seconds",
            "Seconds the active's lease on the journal still runs (active only; else 0)",
            max(left, 0.0) if left is not None else 0.0,
        )
        yield counter(
            "active_lease_lapses_total",
            "Times the active stepped down because its lease on the journal lapsed",
            nn.lease_lapses,
        )
        yield gauge(
            "active_lease_wait_seconds",
            "How long the last transition to active waited out older writers' leases",
            nn.last_lease_wait_s,
        )
        yield counter(
            "readmit_rolls_total",
            "Edit log rolls made to take back a JournalNode that answered again",
            self.m.readmit_rolls,
        )
        b = nn.blocks.status()
        for key, text in (
            ("live_datanodes", "DataNodes alive (heartbeats within the expiry interval)"),
            ("dead_datanodes", "DataNodes registered but past the heartbeat expiry"),
            ("blocks", "Blocks in the block map"),
            ("under_replicated_blocks", "Blocks with fewer live replicas than replication"),
            ("corrupt_blocks", "Blocks with a corrupt replica"),
            ("missing_blocks", "Blocks without any live replica"),
            ("pending_deletion_blocks", "Replicas queued for deletion on DataNodes"),
            ("pending_datanode_messages", "DataNode reports waiting for edits (standby)"),
            ("postponed_misreplicated_blocks", "Deletions postponed until storages report"),
            ("capacity", "Bytes of live DataNodes' capacity"),
            ("remaining", "Bytes remaining on live DataNodes"),
        ):
            value = b[key]
            assert isinstance(value, int)
            yield gauge(
                key if key != "capacity" and key != "remaining" else f"{key}_bytes", text, value
            )
        yield gauge("safe_mode", "1 while in safe mode", 1 if b["safe_mode"] else 0)
        yield counter(
            "block_map_errors_total",
            "Applied ops the block map could not follow",
            self.m.block_map_errors,
        )
        ops = CounterMetricFamily(
            "qjm_namenode_ops_logged_total", "Edit-log ops logged, by RPC method", labels=["method"]
        )
        for method, n in sorted(self.m.ops.items()):
            ops.add_metric([method], n)
        yield ops
        yield from rpc_families("qjm_namenode", nn.ipc_stats())
        info = GaugeMetricFamily(
            "qjm_namenode_info", "Version and name", labels=["version", "name"]
        )
        info.add_metric([__version__, nn.name], 1)
        yield info


class NameNodeMetrics:
    """The registry of one NameNode, and the counters the NameNode bumps."""

    def __init__(self, nn: NameNode) -> None:
        self.registry = CollectorRegistry()
        self.txns_applied = 0
        self.images_received = 0
        self.images_refused_too_large = 0
        self.readmit_rolls = 0
        self.block_map_errors = 0  # ops the block map could not follow (design §B.14)
        self.ops: Counter[str] = Counter()
        self.registry.register(NameNodeCollector(nn, self))

    def count_readmit_roll(self) -> None:
        """Count a roll made to take back a JournalNode (design §N.2)."""
        self.readmit_rolls += 1

    def count_ops(self, method: str, n: int) -> None:
        """Count n ops logged by an RPC method."""
        self.ops[method] += n
