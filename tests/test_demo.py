"""`make demo ARGS=--once`: the whole scenario as an operator runs it, with real processes.

ZooKeeper, 3 JournalNodes, 2 NameNodes, 2 ZKFCs and 3 DataNodes come up; the active NameNode
is killed with SIGKILL while HA clients write (files with bytes among them); the demo must
report the failover time, no acknowledged op missing on the new active, every acknowledged
file read back from it byte for byte, and leave no daemon of its cluster running.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ports import free_port_block
from qjm.cli.demo import Console, LogFollower, render_bar
from qjm.cluster.launcher import cluster_down
from qjm.cluster.process import pid_alive

DEMO_TIMEOUT_S = 150.0
DAEMONS = {"jn1", "jn2", "jn3", "nn1", "nn2", "zkfc1", "zkfc2", "zk1", "dn1", "dn2", "dn3"}


def wait_cluster_json(path: Path, proc: subprocess.Popen[str], deadline: float) -> dict[str, Any]:
    """cluster.json once it names every daemon (the demo writes it when the cluster is up)."""
    while time.monotonic() < deadline:
        if path.exists():
            data: dict[str, Any] = json.loads(path.read_text())
            if data.keys() >= DAEMONS:
                return data
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(
        f"{path} never named all of {sorted(DAEMONS)} while the demo ran (exit {proc.poll()})"
    )


@pytest.mark.slow
@pytest.mark.timeout(DEMO_TIMEOUT_S + 30)
def test_demo_once_fails_over_keeps_every_acknowledged_op_and_stops_everything(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "demo"
    out_path = tmp_path / "demo.out"
    deadline = time.monotonic() + DEMO_TIMEOUT_S
    argv = [sys.executable, "-m", "qjm.cli.demo", "--once", "--dir", str(directory)]
    argv += ["--base-port", str(free_port_block(40))]
    with open(out_path, "w") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    pids: dict[str, int] = {}
    try:
        cluster = wait_cluster_json(directory / "cluster.json", proc, deadline)
        assert "kdc" in cluster, cluster  # secure by default (design §S.4)
        assert cluster["tls"]["http_policy"] == "HTTPS_ONLY", cluster  # and HTTPS (§S.13)
        pids = {name: int(cluster[name]["pid"]) for name in (*DAEMONS, "kdc")}
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.terminate()  # the demo stops its cluster on SIGTERM
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()  # a demo stuck past SIGTERM: its cluster is stopped below
                proc.wait(timeout=10)
        alive = {name: pid for name, pid in pids.items() if pid_alive(pid)}
        if alive:
            cluster_down(directory)  # whatever the demo left, so no daemon outlives the test
            pytest.fail(f"left running after the demo: {alive}\n{out_path.read_text()}")
    text = out_path.read_text()
    assert code == 0, text
    assert re.search(r"Kerberos: realm \S+; every RPC encrypted", text), text
    assert "export KRB5CCNAME=FILE:" in text, text
    # the status URLs it prints are HTTPS, with the cluster's CA for curl (design §S.13)
    assert re.search(
        r"curl --negotiate -u : --cacert \S+ca\.pem https://localhost:\d+/status", text
    )
    failover = re.search(r"failover time: (\d+\.\d+) s", text)
    assert failover, text
    assert 0 < float(failover.group(1)) < 60, text
    assert re.search(r"nn[12] killed with SIGKILL \(pid \d+\)", text), text
    assert re.search(r"nn[12] is active after \d+\.\d+ s", text), text
    assert re.search(r"first write acknowledged by nn[12] after \d+\.\d+ s", text), text
    assert re.search(r"acknowledged but missing on nn[12]: 0\b", text), text
    assert re.search(r"on nn[12] but never attempted: 0\b", text), text
    acked = re.search(r"(\d+) ops acknowledged;", text)
    assert acked and int(acked.group(1)) > 0, text
    files = re.search(r"files: (\d+) acknowledged \((\d+) bytes in (\d+) blocks", text)
    assert files, text
    n_files, n_bytes, n_blocks = (int(g) for g in files.groups())
    assert n_files > 0 and n_blocks > n_files and n_bytes > n_files * 200_000, text  # multi-block
    verified = re.search(
        r"files verified byte for byte \(sha256\) on nn[12]: (\d+) of (\d+) \((\d+) bytes, "
        r"read in [\d.]+ s\); lost: (\d+)$",
        text,
        re.M,
    )
    assert verified, text
    assert [int(g) for g in verified.groups()] == [n_files, n_files, n_bytes, 0], text
    first_read = re.search(r"first read after the failover: after (\d+\.\d+) s from the kill", text)
    assert first_read and 0 < float(first_read.group(1)) < 60, text
    if shutil.which("java"):  # the genuine Hadoop client counted the namespace after it all
        assert "DIR_COUNT" in text and "/demo" in text, text
        assert re.search(r"\d+ bytes, sha256 [0-9a-f]{64}: the same as what was written", text)


def test_progress_line_is_redrawn_in_place_on_a_terminal_and_plain_lines_otherwise() -> None:
    tty, plain = io.StringIO(), io.StringIO()
    for console in (Console(tty, tty=True), Console(plain, tty=False)):
        console.bar("a")
        console.bar("b")
        console.line("event")
        console.bar("c")
        console.end_bar()
    assert tty.getvalue() == "\r\033[Ka\r\033[Kb\r\033[Kevent\n\r\033[Kc\n"
    assert plain.getvalue() == "a\nb\nevent\nc\n"
    assert render_bar(0.5, 10) == "[#####-----]"
    assert render_bar(2.0, 4) == "[####]"


def test_log_follower_shows_only_new_whole_lines_of_the_failover_controllers(
    tmp_path: Path,
) -> None:
    log = tmp_path / "zkfc1.log"
    old = 'ts=2026-01-01T00:00:00.000Z level=INFO daemon=zkfc-nn1 logger=qjm.ha.zkfc msg="old"\n'
    log.write_text(old)
    follower = LogFollower({"zkfc1": log})
    with open(log, "a") as f:
        f.write('ts=2026-01-01T00:00:01.000Z level=INFO daemon=zkfc-nn1 logger=kazoo msg="x"\n')
        f.write("ts=2026-01-01T00:00:02.000Z level=WARNING daemon=zkfc-nn1 logger=qjm.ha.zkfc ")
        f.flush()
        assert follower.read() == []  # half a line waits for its end
        f.write('msg="nn1 \\"is\\" active"\n')
    assert follower.read() == [("2026-01-01T00:00:02.000Z", "zkfc1", 'nn1 "is" active')]
    assert follower.read() == []
