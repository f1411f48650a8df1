"""`make demo`: 3 JournalNodes and 2 NameNodes in manual HA, a workload, a manual failover.

The workload's clients are HA clients given both NameNodes, never told which is active; the
failover is the operator's own `qjm haadmin -failover nn1 nn2` while they write. At the end
every acknowledged op is checked on the new active, and the genuine Hadoop FsShell lists the
result through DIR/hadoop-conf.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qjm.cli import eventloop
from qjm.cli.cluster import cluster_status, print_status
from qjm.cluster.hadoop_conf import fsshell_argv
from qjm.cluster.launcher import CLUSTER_JSON, cluster_down, cluster_up, daemons_of
from qjm.errors import QjmError
from qjm.namenode.client import NameNodeClient

WORKERS = 4
ROOT = "/demo"


def say(text: str) -> None:
    """Print a step of the demo."""
    print(f"\n== {text}", flush=True)


def qjm_command(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `qjm <args>` as an operator would, echoing the command line."""
    print(f"  $ qjm {' '.join(args)}", flush=True)
    return subprocess.run(
        [sys.executable, "-m", "qjm", *args], capture_output=True, text=True, timeout=120
    )


def show(result: subprocess.CompletedProcess[str]) -> None:
    """Print a command's output, indented."""
    for line in (result.stdout + result.stderr).strip().splitlines():
        print(f"    {line}")


@dataclass
class Workload:
    """WORKERS concurrent HA clients making directories and empty files under ROOT."""

    addresses: dict[str, str]  # NameNode address -> name
    acked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    active: str = "?"

    async def worker(self, w: int) -> None:
        """One client: alternately mkdirs and create+complete, recording what was answered."""
        async with NameNodeClient(list(self.addresses)) as client:
            await client.mkdirs(f"{ROOT}/w{w}")
            n = 0
            while not self.stop.is_set():
                n += 1
                path = f"{ROOT}/w{w}/{'dir' if n % 2 else 'file'}{n}"
                try:
                    if n % 2:
                        await client.mkdirs(path)
                    else:
                        await client.touch(path)
                except (QjmError, OSError) as e:
                    self.errors.append(f"{path}: {e}")
                    continue
                self.acked.append(path)
                self.active = self.addresses.get(client.current, client.current)

    async def progress(self, t0: float) -> None:
        """Print the acknowledged count twice a second."""
        last = 0
        while not self.stop.is_set():
            await asyncio.sleep(0.5)  # a progress display, not synchronization
            now = len(self.acked)
            print(
                f"  t={time.monotonic() - t0:5.1f}s  {now:6d} ops acknowledged "
                f"(+{now - last:4d})  clients talk to {self.active}",
                flush=True,
            )
            last = now


async def run_workload_with_failover(cluster: dict[str, Any]) -> Workload:
    """Run the workload; fail over nn1 -> nn2 in the middle of it."""
    nns = {d["rpc"]: name for name, d in daemons_of(cluster).items() if d["kind"] == "namenode"}
    load = Workload(nns)
    t0 = time.monotonic()
    tasks = [asyncio.create_task(load.worker(w)) for w in range(WORKERS)]
    tasks.append(asyncio.create_task(load.progress(t0)))
    await asyncio.sleep(2.0)  # let the workload run a while: this is a demo
    say("manual failover while the clients write: qjm haadmin -failover nn1 nn2")
    started = time.monotonic()
    result = await asyncio.to_thread(
        qjm_command, "haadmin", "--config", cluster["config"], "-failover", "nn1", "nn2"
    )
    show(result)
    print(f"  (the failover took {1000 * (time.monotonic() - started):.0f} ms)", flush=True)
    if result.returncode != 0:
        load.stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise QjmError("the failover failed; see above")
    await asyncio.sleep(2.0)
    load.stop.set()
    await asyncio.gather(*tasks)
    return load


async def verify(cluster: dict[str, Any], load: Workload) -> int:
    """How many acknowledged paths the new active (nn2) lacks (it must be none)."""
    async with NameNodeClient([cluster["nn2"]["rpc"]]) as nn2:
        present = {path async for path, _ in nn2.walk(ROOT)}
    return len(set(load.acked) - present)


def run(directory: Path, base_port: int | None = None) -> int:
    """Start the cluster, run the workload through a failover, show the result and status."""
    if (directory / CLUSTER_JSON).exists():
        say(f"stopping the previous demo cluster in {directory}")
        cluster_down(directory)
        for sub in ("data", "logs", "run", "hadoop-conf"):
            shutil.rmtree(directory / sub, ignore_errors=True)
    say(f"qjm cluster up --dir {directory} --namenodes 2 --no-zookeeper")
    print("  (3 JournalNodes; nn1 formatted and started, nn2 bootstrapped from it, nn1 active)")
    cluster = cluster_up(directory, journalnodes=3, namenodes=2, base_port=base_port)
    for name, d in daemons_of(cluster).items():
        print(f"  {name}: pid {d['pid']}, rpc {d['rpc']}, http http://{d['http']}/")
    print(f"  HDFS client config: {cluster['hadoop_conf']}")
    say("HA state")
    show(qjm_command("haadmin", "--config", cluster["config"], "-getAllServiceState"))

    say(f"a workload: {WORKERS} HA clients making directories and files under {ROOT}")
    print("  (each client is given both NameNodes and finds the active one itself)")
    load = eventloop.run(run_workload_with_failover(cluster))
    say("after the failover")
    show(qjm_command("haadmin", "--config", cluster["config"], "-getAllServiceState"))
    lost = eventloop.run(verify(cluster, load))
    print(
        f"  {len(load.acked)} ops acknowledged, {len(load.errors)} answered with an error; "
        f"acknowledged but missing on nn2: {lost}"
    )

    conf = Path(cluster["hadoop_conf"])
    java = shutil.which("java")
    if java:
        say(f"the genuine Hadoop client: hadoop fs -count -v {ROOT} (HADOOP_CONF_DIR={conf})")
        r = subprocess.run(
            fsshell_argv(conf, "-count", "-v", ROOT, java=java),
            capture_output=True,
            text=True,
            timeout=120,
        )
        show(r)
    say("qjm cluster status")
    print_status(cluster_status(directory))
    say("the cluster keeps running")
    nn2 = cluster["nn2"]
    print(f"  status page:  http://{nn2['http']}/")
    print(f"  status:       .venv/bin/qjm cluster status --dir {directory}")
    print(f"  HA:           .venv/bin/qjm haadmin --config {cluster['config']} -getAllServiceState")
    print(f"  fail back:    .venv/bin/qjm haadmin --config {cluster['config']} -failover nn2 nn1")
    print(f"  stop it:      .venv/bin/qjm cluster down --dir {directory}")
    return 0 if lost == 0 else 1


def main() -> int:
    """Entry point of `python -m qjm.cluster.demo`."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", type=Path, default=Path("demo"), help="cluster directory")
    parser.add_argument("--base-port", type=int, help="ports from this one (default: HDFS's)")
    args = parser.parse_args()
    try:
        return run(args.dir.resolve(), args.base_port)
    except QjmError as e:
        print(f"demo: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
