"""Run every benchmark and write docs/benchmarks.md with the machine and the date."""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import re
import sys
from pathlib import Path

BENCHMARKS = [
    "benchmarks.compare",
    "benchmarks.jn_ingest",
    "benchmarks.tail_lag",
    "benchmarks.namenode",
    "benchmarks.nn_blocks",
    "benchmarks.dn_throughput",
    "benchmarks.failover",
    "benchmarks.security",
    "benchmarks.spark_namespace",
    "benchmarks.spark_ops",
]
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def machine() -> str:
    """A one-line description of this machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}"
    )


MARK = re.compile(r"^<!-- (benchmarks\.\w+) measured (\d{4}-\d{2}-\d{2}) -->$", re.MULTILINE)


def kept_sections(text: str) -> dict[str, tuple[str, str]]:
    """The sections of a benchmarks.md written before: module -> (date, markdown)."""
    found = list(MARK.finditer(text))
    out = {}
    for m, nxt in zip(found, [*found[1:], None], strict=True):
        out[m.group(1)] = (m.group(2), text[m.end() + 1 : nxt.start() if nxt else len(text)])
    return out


def main() -> int:
    """Run the benchmarks named on the command line (default: all) and write the report;
    a partial run keeps the other sections of the last report, each with its date."""
    names = sys.argv[1:] or BENCHMARKS
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    sections = kept_sections(OUT.read_text()) if OUT.exists() and sys.argv[1:] else {}
    failed = []
    for name in names:
        print(f"running {name} ...", flush=True)
        try:
            text = importlib.import_module(name).run()
        except Exception as e:  # one broken benchmark must not hide the others' numbers
            failed.append(name)
            text = f"## {name}\n\nFailed: {type(e).__name__}: {e}\n"
        title, _, body = text.partition("\n")
        sections[name] = (today, f"{title}\n\n_Measured on {today}._\n{body}")
        print(sections[name][1], flush=True)
    order = [n for n in BENCHMARKS if n in sections] + [n for n in sections if n not in BENCHMARKS]
    dates = sorted({sections[n][0] for n in order})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]} (each section says when)"
    header = (
        "# Benchmarks\n\n"
        f"Measured on {when} on this machine: {machine()}.\n"
        "Run `make bench` to measure again (`make bench ARGS=benchmarks.NAME` for one section);\n"
        "timings are never asserted in tests.\n\n"
        "The goals, all from one run: one writer commits within 0.5 ms of a\n"
        "fdatasync (p50); 64 concurrent writers reach at least 50% of what the disk allows\n"
        "and at least 20x etcd and ZooKeeper (3 members each, same records, same machine).\n"
        "The NameNode's goals: at least 10,000 creates/s with 16 clients over RPC\n"
        "and at most 300 bytes of memory per inode at 1 M inodes; a full block report of\n"
        "1 M blocks in at most 5 s and at most 150 bytes of memory per block at 1 M blocks.\n"
        "DataNodes: a 1 GiB file written with replication 3 at least 50% of the disk's\n"
        "3-copy rate and read at least 70% of its sequential read.\n"
        "Automatic failover: the median of 5 kill -9 failovers of the active\n"
        "NameNode under the ZooKeeper session timeout + 2 s.\n"
        "The Spark pipeline: the namespace report of a 1 M-inode image under 60 s\n"
        "in local[2] and faster than `qjm oiv -p Delimited` + pandas; 10 M edits reported.\n\n"
    )
    body = "\n".join(
        f"<!-- {n} measured {sections[n][0]} -->\n{sections[n][1].rstrip()}\n" for n in order
    )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(header + body)
    print(f"wrote {OUT}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
