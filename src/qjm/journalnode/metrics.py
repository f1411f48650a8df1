"""Prometheus metrics of a JournalNode; names follow HDFS's JournalMetrics in snake_case."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from qjm import __version__
from qjm.ipc.metrics import rpc_families
from qjm.journalnode.journal import Journal

NODE_GAUGES = {
    "inflight_request_bytes": "RPC request bytes in flight (max_inflight_request_bytes)",
    "http_connections": "Open HTTP connections (journalnode.http_max_connections)",
    "journals_not_served": "Journals that failed to open at start (see /status problems)",
}
SYNC_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class JournalCollector(Collector):
    """Reads counters and state of every open journal at scrape time."""

    def __init__(
        self,
        journals: Callable[[], Iterable[Journal]],
        syncer_running: Callable[[], bool] = lambda: False,
    ) -> None:
        self._journals = journals
        self._syncer_running = syncer_running
        self.node_values: Callable[[], dict[str, float]] = dict
        self.rpc_values: Callable[[], dict[str, int]] = dict

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """Yield one family per metric, one sample per journal id."""
        counters = {
            "batches_written": "Batches of edits written (HDFS BatchesWritten)",
            "batches_written_while_lagging": "Batches written behind the committed txid",
            "txns_written": "Transactions written (HDFS TxnsWritten)",
            "bytes_written": "Bytes of edits written (HDFS BytesWritten)",
            "txns_served_via_rpc": "Txns served from the edits cache (HDFS TxnsServedViaRpc)",
            "bytes_served_via_rpc": "Bytes served from the edits cache",
            "rpc_empty_responses": "Cache reads with nothing new (HDFS RpcEmptyResponses)",
            "rpc_cache_misses": "Cache reads older than the cache holds",
            "segments_synced": "Finalized segments fetched from peers (HDFS NumEditLogsSynced)",
        }
        gauges = {
            "last_promised_epoch": "Highest epoch this node promised (HDFS LastPromisedEpoch)",
            "last_writer_epoch": "Epoch of the writer of the newest segment",
            "last_written_txid": "Highest txid written to disk (HDFS LastWrittenTxId)",
            "committed_txid": "Highest txid the writer reported committed by a quorum",
            "current_lag_txns": "Committed txns this node has not written (HDFS CurrentLagTxns)",
            "last_journal_timestamp_seconds": "Unix time of the last batch written",
            "last_sync_timestamp_seconds": "Unix time a segment was last fetched from a peer",
        }
        cfam = {
            k: CounterMetricFamily(f"qjm_journal_{k}", h, labels=["jid"])
            for k, h in counters.items()
        }
        gfam = {
            k: GaugeMetricFamily(f"qjm_journal_{k}", h, labels=["jid"]) for k, h in gauges.items()
        }
        journals = list(self._journals())
        for j in journals:
            c = j.counters
            for k in counters:
                cfam[k].add_metric([j.jid], getattr(c, k))
            committed = j.committed_txid if j.committed_txid is not None else 0
            values = {
                "last_promised_epoch": j.last_promised_epoch,
                "last_writer_epoch": j.last_writer_epoch,
                "last_written_txid": j.highest_written_txid,
                "committed_txid": committed,
                "current_lag_txns": max(committed - j.highest_written_txid, 0),
                "last_journal_timestamp_seconds": c.last_journal_timestamp,
                "last_sync_timestamp_seconds": c.last_sync_timestamp,
            }
            for k, v in values.items():
                gfam[k].add_metric([j.jid], v)
        yield from cfam.values()
        yield from gfam.values()
        n = GaugeMetricFamily("qjm_journalnode_journals", "Journals open on this node")
        n.add_metric([], len(journals))
        yield n
        running = GaugeMetricFamily(
            "qjm_journalnode_syncer_running", "1 while the segment syncer runs"
        )
        running.add_metric([], 1 if self._syncer_running() else 0)
        yield running
        info = GaugeMetricFamily("qjm_journalnode_info", "Version of this node", labels=["version"])
        info.add_metric([__version__], 1)
        yield info
        node = self.node_values()
        for key, text in NODE_GAUGES.items():
            if key in node:
                g = GaugeMetricFamily(f"qjm_journalnode_{key}", text)
                g.add_metric([], node[key])
                yield g
        yield from rpc_families("qjm_journalnode", self.rpc_values())


class JournalNodeMetrics:
    """The registry of one JournalNode process."""

    def __init__(
        self,
        journals: Callable[[], Iterable[Journal]],
        syncer_running: Callable[[], bool] = lambda: False,
    ) -> None:
        self.registry = CollectorRegistry()
        self.collector = JournalCollector(journals, syncer_running)
        self.registry.register(self.collector)
        self.sync_seconds = Histogram(
            "qjm_journal_sync_seconds",
            "Latency of fsync after a batch (HDFS Syncs...LatencyMicros)",
            ["jid"],
            buckets=SYNC_BUCKETS,
            registry=self.registry,
        )

    def watch_node(self, values: Callable[[], dict[str, float]]) -> None:
        """Export node-wide gauges read from values() at scrape time."""
        self.collector.node_values = values

    def watch_rpc(self, values: Callable[[], dict[str, int]]) -> None:
        """Export the RPC server's counters (IpcServer.stats) read at scrape time."""
        self.collector.rpc_values = values

    def attach(self, journal: Journal) -> None:
        """Route a journal's sync timings into the histogram."""
        journal.counters.observe_sync = self.sync_seconds.labels(journal.jid).observe
