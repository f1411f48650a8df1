"""A short chaos run on real processes (ZooKeeper, 3 JournalNodes, 2 NameNodes, 2 ZKFCs):
a few seeded faults under the workload, no violation; then the same checks, run again on
the same cluster after the test meddles with the namespace behind the clients' backs, find
what it did. `make chaos` runs long ones (docs/reliability.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ha_cluster import free_cluster_ports
from qjm.cluster.launcher import cluster_down
from qjm.namenode.client import NameNodeClient
from qjm.testing.chaos.nemesis import schedule
from qjm.testing.chaos.runner import RunConfig, Runner, prepare_directory
from qjm.testing.chaos.summary import Summary

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SEED = 85  # its first four actions: one of each kind below
KINDS = ("kill-active-nn", "stop-active-nn", "kill-two-jns", "restart-zookeeper")


async def run_then_meddle(runner: Runner) -> tuple[Summary, list[str]]:
    summary = await runner.run()
    found_before = len(summary.violations)
    control = runner.control
    assert control is not None
    victim = next(
        p
        for p, e in sorted(runner.clients[1].model.ns.state.items())
        if e[0] == "f" and p not in runner.clients[1].model.tainted
    )
    async with NameNodeClient(list(control.namenodes().values()), max_rounds=30) as c:
        await c.mkdirs("/chaos/c0/never-made")
        assert await c.delete(victim)
    await runner.check("after the test meddled")
    return summary, [v.kind for v in summary.violations[found_before:]]


def test_a_short_chaos_run_and_its_checks_catch_meddling(tmp_path: Path) -> None:
    directory = tmp_path / "chaos"
    assert [a.kind for a in schedule(SEED, 4, 3.0, KINDS)] == [
        "kill-active-nn",
        "stop-active-nn",
        "kill-two-jns",
        "restart-zookeeper",
    ]
    prepare_directory(directory)
    cfg = RunConfig(
        seed=SEED,
        directory=directory,
        actions=4,
        clients=4,
        kinds=KINDS,
        base_port=free_cluster_ports(),
        keep=True,
    )
    runner = Runner(cfg)
    try:
        summary, meddled = asyncio.run(run_then_meddle(runner))
    finally:
        cluster_down(directory)
    print(summary.text())
    assert summary.violations[: len(summary.violations) - len(meddled)] == []
    assert summary.actions_done == 4 and summary.actions_by_kind == dict.fromkeys(KINDS, 1)
    assert summary.ops_by_outcome["ack"] > 100 and summary.reads_checked > 20
    assert summary.checks == 7  # at the start, after each action, at the end, after meddling
    assert sum(summary.probes.values()) == 1, summary.probes  # the stop-active-nn's probe
    fo = {f["kind"]: f["seconds"] for f in summary.failovers}
    assert fo.keys() == {"kill-active-nn", "stop-active-nn"} and all(fo.values()), fo
    assert sorted(meddled) == ["lost", "never attempted"], meddled
    assert (directory / "history.jsonl").stat().st_size > 0
