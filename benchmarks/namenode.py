"""The NameNode's figures for docs/benchmarks.md: ops/s over RPC and in process, memory, start-up.

Runs benchmarks.nn_rpc (a NameNode process on 3 JournalNode processes, 1 and 16 clients)
and benchmarks.nn_namespace (the namespace alone, 1 M inodes) and writes one section.
"""

from __future__ import annotations

from typing import Any

from benchmarks import nn_namespace, nn_rpc
from benchmarks.common import timed_section

GOAL_CREATES_PER_S = 10_000
GOAL_BYTES_PER_INODE = 300


def _rpc_table(rpc: dict[str, Any]) -> list[str]:
    lines = [
        "| op | clients | ops/s | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, by_n in rpc["results"].items():
        for n, r in by_n.items():
            lines.append(
                f"| {label} | {n} | {r['ops_per_s']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} |"
            )
    return lines


def section(rpc: dict[str, Any], ns: dict[str, Any], took_s: float, loads: tuple[str, str]) -> str:
    """The markdown section for the measured results."""
    creates = rpc["results"]["create+complete"]["16"]["ops_per_s"]
    mem = ns["memory"]
    start = ns["startup"]
    inproc = ns["in_process"]
    met_rate = "met" if creates >= GOAL_CREATES_PER_S else "**not met**"
    met_mem = "met" if mem["bytes_per_inode"] <= GOAL_BYTES_PER_INODE else "**not met**"
    lines = [
        "## NameNode: namespace ops/s, memory per inode, start-up",
        "",
        f"Goals: at least {GOAL_CREATES_PER_S:,} creates/s with 16 clients over RPC; "
        f"at most {GOAL_BYTES_PER_INODE} bytes of memory per inode at 1 M inodes.",
        "",
        f"- create+complete with 16 clients over RPC: **{creates:,.0f}/s** — goal {met_rate}.",
        f"- memory per inode at {mem['inodes']:,} inodes: **{mem['bytes_per_inode']} B** "
        f"({mem['method']}; tracemalloc at {ns['memory_traced']['inodes']:,} inodes: "
        f"{ns['memory_traced']['bytes_per_inode']} B) — goal {met_mem}.",
        "",
        "Why creates/s falls short: every process shares this machine's 2 cores. Profiled while",
        "building it, one create+complete (two RPCs, two ops group-committed to 3 JournalNodes)",
        "costs the NameNode about 0.3 ms of CPU (half Python, a third kernel: context switches",
        "and socket calls), and each JournalNode about 0.3 ms per synced batch; at 10,000",
        "creates/s the NameNode alone would need about 3 cores and the JournalNodes about 1.7,",
        "before the 4 client processes. A second flush in flight (FSEditLog's",
        "max_flushes_in_flight) made it slower here: smaller batches cost the JournalNodes more",
        "than the overlap saves on one machine. Reads show the RPC layer itself: getFileInfo",
        "needs no sync.",
        "",
        "### Over RPC (Hadoop IPC)",
        "",
        f"{rpc['setup']}. A write is answered only after a quorum of JournalNodes (and the "
        f"NameNode's local edits copy) synced it; each run {rpc['seconds_per_run']:.0f} s.",
        "",
        *_rpc_table(rpc),
        "",
        "### In process, no RPC and no edit log (as HDFS's NNThroughputBenchmark)",
        "",
        "Each call is plan (path, permission and quota checks, making the HDFS ops) + apply, "
        "by a caller that is not a superuser.",
        "",
        "| op | ops/s |",
        "|---|---:|",
        f"| mkdirs | {inproc['mkdirs_per_s']:,} |",
        f"| create+complete | {inproc['create_complete_per_s']:,} |",
        f"| getFileInfo | {inproc['getfileinfo_per_s']:,} |",
        "",
        f"### Start-up from an image of {start['inodes']:,} inodes "
        f"({start['image_bytes'] / 2**20:.0f} MiB)",
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| load (read_image + from_image) | {start['startup_s']} |",
        f"| load with the column loader (what the NameNode starts with) | "
        f"{start['startup_fast_loader_s']} |",
        f"| save (to_image + write_image) | {start['to_image_s'] + start['write_image_s']:.2f} |",
        f"| copy of the namespace (what a checkpoint holds the applier for) | {start['copy_s']} |",
        "",
        f"This section took {took_s:.0f} s; load average (1 min) {loads[0]} before, "
        f"{loads[1]} after.",
        "",
    ]
    return "\n".join(lines)


def run() -> str:
    """Measure and return the markdown section."""
    return timed_section(
        lambda: (nn_rpc.run(), nn_namespace.run()),
        lambda m, took_s, loads: section(m[0], m[1], took_s, loads),
    )


if __name__ == "__main__":
    print(run())
