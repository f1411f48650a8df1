"""The writer with real JournalNode processes: `qjm journal write|recover`, kill -9, SIGSTOP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import JNFactory, JNProcess, run_qjm
from qjm.cli.journal_write import ConcurrentResult
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import QJournalSettings
from qjm.editlog.framing import OP_OPAQUE
from qjm_cluster import check_dirs_agree, read_dir_segments

pytestmark = pytest.mark.timeout(120)
JID = "clitest"


def start3(jn_factory: JNFactory) -> tuple[list[JNProcess], str]:
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    uri = f"qjournal://{';'.join(jn.rpc for jn in jns)}/{JID}"
    done = run_qjm("journal", "format", "--uri", uri)
    assert done.returncode == 0, done.stderr
    return jns, uri


def currents(jns: list[JNProcess]) -> list[Path]:
    return [jn.edits_dir / JID / "current" for jn in jns]


def read_lines_until(proc: subprocess.Popen[str], want: int, wait_s: float = 60.0) -> list[str]:
    """Read stdout lines until `want` of them arrived (or the process ended)."""
    assert proc.stdout is not None
    lines: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + wait_s
    while len(lines) < want:
        left = deadline - time.monotonic()
        assert left > 0, f"only {len(lines)} lines after {wait_s}s"
        if not sel.select(left):
            continue
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
    sel.close()
    return lines


@pytest.mark.slow
def test_write_prints_each_acked_txid_and_finalizes(jn_factory: JNFactory) -> None:
    jns, uri = start3(jn_factory)
    done = run_qjm("journal", "write", "--uri", uri, "--count", "25", "--batch", "10", "--finalize")
    assert done.returncode == 0, done.stderr
    # START op alone, then batches ending at 11, 21, 26, then the END op.
    assert done.stdout.split() == ["1", "11", "21", "26", "27"]
    assert "wrote 25 ops (txids 1-27" in done.stderr and "epoch 1" in done.stderr
    for cur in currents(jns):
        assert list(read_dir_segments(cur)) == [(1, 27)]
    again = run_qjm("journal", "recover", "--uri", uri)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "27"
    assert "writer epoch 2" in again.stderr


@pytest.mark.slow
def test_write_with_concurrent_writers_group_commits_and_summarizes(jn_factory: JNFactory) -> None:
    jns, uri = start3(jn_factory)
    args = ("journal", "write", "--uri", uri, "--count", "300", "--concurrency", "32")
    done = run_qjm(*args, "--finalize")
    assert done.returncode == 0, done.stderr
    # START op, each writer's op as it was acknowledged, then the END op.
    printed = [int(t) for t in done.stdout.split()]
    assert printed[0] == 1 and printed[-1] == 302
    assert sorted(printed[1:-1]) == list(range(2, 302))
    summary = done.stderr.strip().splitlines()[-1]
    m = re.search(
        r"(\d+) records/s, p50 ([\d.]+) ms, p99 ([\d.]+) ms, 32 writers \(.*?"
        r"([\d.]+) ops per batch",
        summary,
    )
    assert m is not None, summary
    assert float(m.group(4)) > 2  # ops shared round trips (group commit)
    assert int(m.group(1)) > 0 and 0 < float(m.group(2)) <= float(m.group(3))
    for cur in currents(jns):
        assert list(read_dir_segments(cur)) == [(1, 302)]
    both = run_qjm(*args, "--batch", "5")
    assert both.returncode != 0 and "--batch or --concurrency" in both.stderr
    assert "Traceback" not in both.stderr


@pytest.mark.slow
def test_kill_9_writer_then_recover_keeps_every_printed_txid(jn_factory: JNFactory) -> None:
    jns, uri = start3(jn_factory)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "qjm",
            "journal",
            "write",
            "--uri",
            uri,
            "--count",
            "1000",
            "--batch",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        lines = read_lines_until(proc, 100)
        os.kill(proc.pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    printed = [int(x) for x in lines + rest.split()]
    assert printed == sorted(printed)
    last_printed = printed[-1]
    assert last_printed < 1001, "the writer finished before it was killed"
    done = run_qjm("journal", "recover", "--uri", uri)
    assert done.returncode == 0, done.stderr
    recovered = int(done.stdout.strip())
    assert recovered >= last_printed
    values = check_dirs_agree(currents(jns))
    assert set(range(1, recovered + 1)) <= set(values)


@pytest.mark.slow
def test_no_quorum_is_one_clear_line(jn_factory: JNFactory) -> None:
    jns, uri = start3(jn_factory)
    jn_factory.stop(jns[0])
    jn_factory.stop(jns[1])
    for args in (["write", "--count", "5"], ["recover"]):
        done = run_qjm("journal", *args, "--uri", uri)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("qjm: error: ")
        assert "quorum size 2/3" in lines[0]
        assert f"{jns[0].rpc}: unreachable" in lines[0]


@pytest.mark.slow
async def test_sigstopped_journalnode_adds_no_latency_and_rejoins_next_segment(
    jn_factory: JNFactory,
) -> None:
    jns, uri = start3(jn_factory)
    settings = QJournalSettings(write_txns_timeout_ms=1_000, start_segment_timeout_ms=1_000)
    q = QuorumJournalManager(uri, None, settings)
    stopped = jns[2]
    try:
        assert await q.recover_unfinalized_segments() == 0
        stream = await q.start_log_segment(1)
        for _ in range(20):
            stream.write_op(OP_OPAQUE, b"before")
            await stream.flush()
        os.kill(stopped.pid, signal.SIGSTOP)
        try:
            # Writes go on at the speed of the other two: 200 batches well inside the
            # stopped node's 1 s write timeout would be impossible if we waited for it.
            started = time.monotonic()
            for _ in range(200):
                stream.write_op(OP_OPAQUE, b"while stopped")
                await stream.flush()
            took = time.monotonic() - started
            assert took < 20, f"200 batches took {took:.1f}s with one node stopped"
            ch = q.loggers.channels[2]
            # Its first call times out after 1 s; from then on it is out of sync.
            deadline = time.monotonic() + 10
            while not ch.out_of_sync:
                assert time.monotonic() < deadline, "stopped node never marked out of sync"
                stream.write_op(OP_OPAQUE, b"while stopped")
                await stream.flush()
            assert ch.metrics().out_of_sync
        finally:
            os.kill(stopped.pid, signal.SIGCONT)
        end = await stream.close()
        await q.finalize_log_segment(1, end)  # the revived node cannot: it missed txns
        # The next segment brings it back.
        seg2 = end + 1
        stream = await q.start_log_segment(seg2)
        deadline = time.monotonic() + 30
        while q.loggers.channels[2].out_of_sync:
            assert time.monotonic() < deadline, "node never rejoined"
            await asyncio.sleep(0.05)  # poll interval of a wait bounded by the deadline
        for _ in range(10):
            stream.write_op(OP_OPAQUE, b"after")
            await stream.flush()
        end2 = await stream.close()
        await q.finalize_log_segment(seg2, end2)
        await asyncio.wait_for(q.loggers.wait_idle(), 30)
    finally:
        await q.close()
    segs = read_dir_segments(currents(jns)[2])
    assert (seg2, end2) in segs, f"{stopped.name} did not rejoin: {sorted(segs)}"
    assert (1, end) not in segs
    check_dirs_agree(currents(jns))


@pytest.mark.slow
def test_a_bad_config_beside_uri_is_an_error_not_ignored(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    uri = "qjournal://127.0.0.1:1;127.0.0.1:2;127.0.0.1:3/x"
    for args in (["status"], ["read"], ["write", "--count", "1"]):
        done = run_qjm("journal", *args, "--uri", uri, "--config", str(missing))
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.startswith(f"qjm: error: cannot read config {missing}"), done.stderr


@pytest.mark.slow
def test_same_node_twice_in_a_uri_is_refused_by_format(jn_factory: JNFactory) -> None:
    jn = jn_factory.start("jn0")
    port = jn.rpc.rsplit(":", 1)[1]
    other = jn_factory.start("jn1")
    uri = f"qjournal://127.0.0.1:{port};localhost:{port};{other.rpc}/{JID}"
    done = run_qjm("journal", "format", "--uri", uri)
    assert done.returncode == 1, done.stderr
    assert f"127.0.0.1:{port} and localhost:{port} are the same node" in done.stderr


@pytest.mark.slow
def test_status_flags_a_promise_below_the_writer_epoch(jn_factory: JNFactory) -> None:
    jns, uri = start3(jn_factory)
    done = run_qjm("journal", "write", "--uri", uri, "--count", "3")
    assert done.returncode == 0, done.stderr
    (currents(jns)[1] / "last-promised-epoch").unlink()  # lost: the node now says 0
    jns[1] = jn_factory.restart(jns[1])
    st = run_qjm("journal", "status", "--uri", uri, "--json")
    assert st.returncode == 0, st.stderr
    nodes = {n["address"]: n for n in json.loads(st.stdout)["nodes"]}
    assert nodes[jns[0].rpc]["problems"] == []
    problems = nodes[jns[1].rpc]["problems"]
    assert any(p.startswith("promised epoch 0 is below writer epoch 1") for p in problems)
    assert any(p.startswith("last-promised-epoch is missing") for p in problems)
    table = run_qjm("journal", "status", "--uri", uri)
    assert f"PROBLEM {jns[1].rpc}: promised epoch 0 is below writer epoch 1" in table.stdout


@pytest.mark.slow
def test_write_refuses_ops_and_batches_too_large_before_fencing() -> None:
    uri = "qjournal://127.0.0.1:1;127.0.0.1:2;127.0.0.1:3/x"  # nobody listens: not reached
    done = run_qjm("journal", "write", "--uri", uri, "--count", "1", "--size", "60000000")
    assert done.returncode == 1
    assert done.stderr.startswith("qjm: error: --size 60000000 is larger than an op may be")
    done = run_qjm("journal", "write", "--uri", uri, "--count", "9", "--size", "10000000")
    assert done.returncode == 1
    assert "--batch 10 ops of --size 10000000 make" in done.stderr
    assert "use a smaller --batch" in done.stderr


SUMMARY = re.compile(
    r"^wrote (\d+) records in (\d+\.\d\d) s: (\d+) records/s, p50 (\d+\.\d\d) ms, "
    r"p99 (\d+\.\d\d) ms, (\d+) writers? \(txids (\d+)-(\d+) in (\d+) batches, "
    r"\d+\.\d ops per batch, epoch (\d+), client CPU (\d+)%\)$"
)


@pytest.mark.slow
def test_write_concurrency_ends_with_one_summary_line_and_writes_exact_txids(
    jn_factory: JNFactory,
) -> None:
    _, uri = start3(jn_factory)
    done = run_qjm(
        "journal", "write", "--uri", uri, "--concurrency", "16", "--count", "300",
        "--size", "183", "--finalize",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    m = SUMMARY.match(last)
    assert m, f"not a summary line: {last!r}"
    records, seconds, rate, p50, p99, writers, first, end, batches, epoch, cpu = m.groups()
    assert (int(records), int(writers), int(first), int(end)) == (300, 16, 2, 301)
    assert float(seconds) > 0 and int(rate) > 0
    assert 0 < float(p50) <= float(p99)
    # Group commit: 16 writers waiting together share batches.
    assert 1 <= int(batches) < 300
    assert epoch == "1"
    assert int(cpu) > 0
    # START at 1, each of the 300 ops as acknowledged, END at 302: the last line is the
    # last acknowledged txid.
    printed = [int(t) for t in done.stdout.split()]
    assert printed[0] == 1 and printed[-1] == 302
    assert sorted(printed[1:-1]) == list(range(2, 302))
    read = run_qjm("journal", "read", "--uri", uri)
    assert read.returncode == 0, read.stderr
    ops = [json.loads(line) for line in read.stdout.splitlines()]
    assert [op["txid"] for op in ops] == list(range(1, 303))
    for op in ops[1:-1]:
        assert op["opcode"] == "OP_OPAQUE"
        body = bytes.fromhex(op["payload"])
        assert len(body) == 183
        assert body.startswith(f"qjm-write epoch=1 txid={op['txid']} ".encode())


@pytest.mark.slow
def test_write_concurrency_for_a_duration_then_recover_keeps_every_record(
    jn_factory: JNFactory,
) -> None:
    _, uri = start3(jn_factory)
    done = run_qjm("journal", "write", "--uri", uri, "--concurrency", "4", "--duration", "0.5")
    assert done.returncode == 0, done.stderr
    m = SUMMARY.match(done.stderr.strip().splitlines()[-1])
    assert m, done.stderr
    records, end = int(m.group(1)), int(m.group(8))
    assert records > 0 and end == records + 1
    # Every acknowledged txid is printed; the last line is the last acknowledged txid.
    printed = [int(t) for t in done.stdout.split()]
    assert printed[-1] == end
    assert set(printed) == set(range(1, end + 1))
    again = run_qjm("journal", "recover", "--uri", uri)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == str(end)


@pytest.mark.slow
def test_write_concurrency_refuses_batch_and_duration_alone() -> None:
    uri = "qjournal://127.0.0.1:1;127.0.0.1:2;127.0.0.1:3/x"
    both = run_qjm(
        "journal", "write", "--uri", uri, "--concurrency", "2", "--count", "5", "--batch", "3"
    )
    assert both.returncode != 0 and "--batch does not apply with --concurrency" in both.stderr
    alone = run_qjm("journal", "write", "--uri", uri, "--duration", "1")
    assert alone.returncode != 0 and "--duration needs --concurrency" in alone.stderr


def test_write_concurrency_summary_names_one_writer_in_the_singular() -> None:
    result = ConcurrentResult(
        records=4,
        seconds=2.0,
        latencies_s=[0.001, 0.002, 0.003, 0.004],
        writers=1,
        first_txid=2,
        last_txid=5,
        batches=4,
        epoch=3,
        cpu_s=1.0,
    )
    line = result.summary()
    assert SUMMARY.match(line), line
    assert ", 1 writer (txids 2-5 in 4 batches, 1.0 ops per batch, epoch 3" in line
    assert "2 records/s" in line and "client CPU 50%" in line
