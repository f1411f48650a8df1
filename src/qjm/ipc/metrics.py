"""Prometheus families of an IPC server's counters (IpcServer.stats), for a daemon's /metrics."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

RPC_COUNTERS = {
    "calls": "RPC calls received",
    "errors": "RPC calls answered with an error",
    "bytes_in": "RPC bytes received",
    "bytes_out": "RPC bytes sent",
    "connections_refused": "RPC connections refused at ipc_max_connections",
    "connections_idle_closed": "RPC connections closed after ipc_idle_timeout_ms idle",
    "connections_read_capped": (
        "RPC connections closed for taking unfinished frames past ipc_max_unfinished_bytes"
    ),
    "auth_failures": "RPC connections closed for a failed or refused Kerberos exchange or frame",
}
RPC_GAUGES = {
    "connections": "Open RPC connections",
    "unfinished_bytes": "Bytes of RPC frames received but not yet whole, all connections",
    "unfinished_bytes_peak": "The most unfinished_bytes has been since the start",
    "max_connections": "RPC connections allowed (ipc_max_connections, after the fd limit)",
    "max_unfinished_bytes": "Cap on unfinished_bytes (ipc_max_unfinished_bytes)",
}


def rpc_families(
    prefix: str, stats: Mapping[str, int]
) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
    """{prefix}_rpc_<counter>_total and {prefix}_rpc_<gauge> of an IpcServer's stats()."""
    for key, text in RPC_COUNTERS.items():
        c = CounterMetricFamily(f"{prefix}_rpc_{key}_total", text)
        c.add_metric([], stats.get(key, 0))
        yield c
    for key, text in RPC_GAUGES.items():
        g = GaugeMetricFamily(f"{prefix}_rpc_{key}", text)
        g.add_metric([], stats.get(key, 0))
        yield g
