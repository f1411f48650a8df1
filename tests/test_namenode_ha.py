"""Two NameNodes on the same three JournalNode processes: tailing, failover both ways, a
deposed active, checkpoints equal to the active's namespace, image upload and bootstrap."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from conftest import JNFactory
from nn_harness import (
    Rpc,
    copy_name_dir,
    format_cluster,
    make_config,
    ns_tree,
    start_nn,
    tree,
)
from qjm.config import ClusterConfig
from qjm.ipc import RemoteError
from qjm.namenode.errors import StandbyError
from qjm.namenode.server import NameNode
from qjm.namenode.types import HAState
from qjm.testing.wait import wait_until_async

STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"


async def pair(
    jn_factory: JNFactory, root: Path, **settings: Any
) -> tuple[ClusterConfig, NameNode, NameNode]:
    """nn1 active and nn2 standby on three JournalNode processes."""
    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, root, names=("nn1", "nn2"), **settings)
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    nn1 = await start_nn(cfg, "nn1")
    nn2 = await start_nn(cfg, "nn2")
    await nn1.transition_to_active("test")
    return cfg, nn1, nn2


async def caught_up(standby: NameNode, active: NameNode) -> None:
    """Wait until the standby applied everything the active synced (a client may see)."""
    await wait_until_async(
        lambda: (
            f"{standby.name} to apply up to txid {active.state_id()} (at "
            f"{standby.applied_txid}; tailer error: {standby.tailer and standby.tailer.last_error})"
        ),
        lambda: standby.applied_txid >= active.state_id(),
    )


async def workload(rpc: Rpc, tag: str, n: int = 5) -> None:
    """Some mkdirs, creates and a delete."""
    for i in range(n):
        assert await rpc.mkdirs(f"/{tag}/d{i}")
        await rpc.touch(f"/{tag}/d{i}/f")
    assert await rpc.delete(f"/{tag}/d0")


@pytest.mark.slow
async def test_standby_tails_the_active(tmp_path: Path, jn_factory: JNFactory) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    rpc = Rpc(nn1.rpc_address())
    try:
        assert nn2.ha_state == HAState.STANDBY
        await workload(rpc, "w")
        await caught_up(nn2, nn1)
        assert nn2.applied_txid == nn1.last_txid()
        assert tree(nn2) == tree(nn1)
    finally:
        await rpc.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_failover_both_ways_keeps_every_acknowledged_op(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    r1, r2 = Rpc(nn1.rpc_address()), Rpc(nn2.rpc_address())
    try:
        await workload(r1, "one")
        expected = tree(nn1)
        await nn1.transition_to_standby("test")
        assert nn1.ha_state == HAState.STANDBY
        with pytest.raises(RemoteError) as refused:
            await r1.mkdirs("/refused")
        assert refused.value.class_name == STANDBY_EXCEPTION
        await nn2.transition_to_active("test")
        assert tree(nn2) == expected
        await workload(r2, "two")
        await nn2.transition_to_standby("test")
        await nn2.transition_to_standby("test")  # idempotent
        await nn1.transition_to_active("test")
        assert tree(nn1) == tree(nn2)
        assert await r1.stat("/two/d4/f") is not None
        assert await r1.stat("/refused") is None
        await caught_up(nn2, nn1)
    finally:
        await r1.close()
        await r2.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_a_deposed_active_cannot_write(tmp_path: Path, jn_factory: JNFactory) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    r1, r2 = Rpc(nn1.rpc_address()), Rpc(nn2.rpc_address())
    try:
        await workload(r1, "before")
        old_epoch = nn1.qjm.epoch if nn1.qjm else None
        # nn2 takes over without nn1 being told (a forced failover, or a split brain).
        await nn2.transition_to_active("forced")
        assert nn2.qjm is not None and old_epoch is not None and nn2.qjm.epoch > old_epoch
        with pytest.raises(RemoteError) as failed:
            await r1.mkdirs("/from-the-deposed")
        assert failed.value.class_name == STANDBY_EXCEPTION
        assert nn1.ha_state == HAState.STANDBY
        for _ in range(3):
            with pytest.raises(RemoteError) as refused:
                await r1.mkdirs("/again")
            assert refused.value.class_name == STANDBY_EXCEPTION
        with pytest.raises(StandbyError):
            await nn1.msync(None)  # type: ignore[arg-type]
        assert await r2.stat("/from-the-deposed") is None
        await workload(r2, "after")
        # The deposed NameNode reloads and follows the new active as a standby.
        await caught_up(nn1, nn2)
        assert tree(nn1) == tree(nn2)
        assert "/from-the-deposed" not in tree(nn1)
    finally:
        await r1.close()
        await r2.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_concurrent_transitions_are_serialized(tmp_path: Path, jn_factory: JNFactory) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    try:
        await nn1.transition_to_standby("test")
        await asyncio.gather(*(nn2.transition_to_active("test") for _ in range(3)))
        assert nn2.ha_state == HAState.ACTIVE
        epoch = nn2.qjm.epoch if nn2.qjm else None
        await nn2.transition_to_active("again")
        assert nn2.qjm is not None and nn2.qjm.epoch == epoch
    finally:
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_standby_image_equals_the_active_namespace(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    from qjm.namenode.image import read_image
    from qjm.namenode.namespace import Namespace

    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    rpc = Rpc(nn1.rpc_address())
    try:
        await workload(rpc, "ckpt", 10)
        await caught_up(nn2, nn1)
        assert nn2.checkpointer is not None
        txid = await nn2.checkpointer.checkpoint()
        assert txid == nn1.last_txid()  # no write since: both at the same txid
        path = nn2.checkpointer.image_file(txid)
        loaded = Namespace.from_image(read_image(path), superuser=nn2.superuser)
        assert ns_tree(loaded) == tree(nn1)
        # The upload reached the active, which keeps it.
        assert nn1.storage is not None
        assert txid in [t for t, _ in nn1.storage.images()]
        assert (
            nn1.storage.image_path(txid).read_bytes() == nn2.storage.image_path(txid).read_bytes()  # type: ignore[union-attr]
        )
        # Not newer: refused.
        await nn2.checkpointer.upload(txid)
        assert nn2.checkpointer.last_upload["nn1"].startswith("409")
    finally:
        await rpc.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_checkpoint_by_txn_count_and_restart_from_it(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    cfg, nn1, nn2 = await pair(
        jn_factory, tmp_path, checkpoint_txns=10, checkpoint_check_period_s=1
    )
    rpc = Rpc(nn1.rpc_address())
    try:
        await workload(rpc, "auto", 6)
        await caught_up(nn2, nn1)
        assert nn2.checkpointer is not None
        cp = nn2.checkpointer
        await wait_until_async("a checkpoint by txn count", lambda: cp.checkpoints >= 1, 15)
        await wait_until_async("the image upload", lambda: cp.uploads >= 1, 15)
        expected = tree(nn1)
    finally:
        await rpc.close()
        await nn2.stop()
    again = await start_nn(cfg, "nn2")
    try:
        assert again.image_txid >= 10
        await caught_up(again, nn1)
        assert tree(again) == expected
    finally:
        await again.stop()
        await nn1.stop()


async def newest_image_shown(nn: NameNode) -> dict[str, int]:
    """The newest image txid as the status page, /status and /metrics of nn show it."""
    import re

    import aiohttp

    async with aiohttp.ClientSession() as s:
        async with s.get(f"{nn.http_url()}/") as r:
            page = await r.text()
        async with s.get(f"{nn.http_url()}/status") as r:
            status = await r.json()
        async with s.get(f"{nn.http_url()}/metrics") as r:
            metrics = await r.text()
    row = re.search(r"<th>newest image txid</th><td>(\d+)</td>", page)
    gauge = re.search(r"^qjm_namenode_last_checkpoint_txid ([0-9.e+]+)$", metrics, re.M)
    assert row is not None and gauge is not None
    return {
        "page": int(row.group(1)),
        "status": int(status["image_txid"]),
        "metrics": int(float(gauge.group(1))),
    }


@pytest.mark.slow
async def test_page_status_and_metrics_show_one_newest_image_after_a_checkpoint(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    """The standby's checkpoint, saved there and uploaded to the active: both NameNodes'
    status page, /status and /metrics name that image's txid, read from one place."""
    _, nn1, nn2 = await pair(jn_factory, tmp_path)
    rpc = Rpc(nn1.rpc_address())
    try:
        await workload(rpc, "img")
        await caught_up(nn2, nn1)
        assert nn2.checkpointer is not None
        txid = await nn2.checkpointer.checkpoint()
        assert txid > 0 and nn2.checkpointer.uploads == 1
        for nn in (nn1, nn2):
            shown = await newest_image_shown(nn)
            assert shown == {"page": txid, "status": txid, "metrics": txid}, (nn.name, shown)
    finally:
        await rpc.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_bootstrap_standby_fetches_the_image(tmp_path: Path, jn_factory: JNFactory) -> None:
    from qjm.namenode.checkpointer import bootstrap_standby

    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1", "nn2"))
    await format_cluster(cfg, "nn1")
    nn1 = await start_nn(cfg, "nn1")
    try:
        await nn1.transition_to_active("test")
        rpc = Rpc(nn1.rpc_address())
        try:
            await workload(rpc, "boot")
        finally:
            await rpc.close()
        txid = await bootstrap_standby(cfg, "nn2")
        assert txid == 0  # the formatted image; the standby replays the shared edits after it
        nn2 = await start_nn(cfg, "nn2")
        try:
            assert nn2.storage is not None and nn1.storage is not None
            assert nn2.storage.read_ns_info() == nn1.storage.read_ns_info()
            await caught_up(nn2, nn1)
            assert tree(nn2) == tree(nn1)
        finally:
            await nn2.stop()
        with pytest.raises(Exception, match="force"):
            await bootstrap_standby(cfg, "nn2")
    finally:
        await nn1.stop()


@pytest.mark.slow
async def test_a_deposed_active_taking_over_again_drops_its_unsynced_edits(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path, roll_txns=7)
    r1, r2 = Rpc(nn1.rpc_address()), Rpc(nn2.rpc_address())
    try:
        await workload(r1, "a")
        await nn2.transition_to_active("forced")
        await workload(r2, "b")
        with pytest.raises(RemoteError):
            await r1.mkdirs("/lost")  # applied in nn1's memory, refused by the quorum
        # At once, before nn1 settled in the background: it must not keep /lost.
        await nn1.transition_to_active("forced back")
        assert nn1.ha_state == HAState.ACTIVE
        assert "/lost" not in tree(nn1)
        assert await r1.stat("/b/d4/f") is not None
        with pytest.raises(RemoteError) as refused:
            await r2.mkdirs("/lost-too")
        assert refused.value.class_name == STANDBY_EXCEPTION
        await nn2.transition_to_active("forced again")
        assert "/lost-too" not in tree(nn2)
        # nn1 learns it was deposed without writing (its epoch check), then follows nn2.
        await wait_until_async(
            "nn1 to notice it was deposed", lambda: nn1.ha_state == HAState.STANDBY
        )
        with pytest.raises(RemoteError) as refused:
            await r1.stat("/")
        assert refused.value.class_name == STANDBY_EXCEPTION
        await workload(r2, "c")
        await caught_up(nn1, nn2)
        assert tree(nn1) == tree(nn2)
    finally:
        await r1.close()
        await r2.close()
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_without_a_quorum_a_standby_waits_and_cannot_become_active(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    from qjm.namenode.errors import ServiceFailedError

    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1", "nn2"))
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    nn1 = await start_nn(cfg, "nn1")
    try:
        await nn1.transition_to_active("test")
        rpc = Rpc(nn1.rpc_address())
        try:
            await workload(rpc, "q")
        finally:
            await rpc.close()
        expected = tree(nn1)
    finally:
        await nn1.stop()
    last = nn1.last_txid()
    down = jns[:2]
    for jn in down:
        jn_factory.stop(jn)
    nn2 = await start_nn(cfg, "nn2")  # starts (as HDFS's standby does) and keeps tailing
    try:
        assert nn2.ha_state == HAState.STANDBY
        assert nn2.applied_txid == 0
        with pytest.raises(ServiceFailedError, match="could not become active"):
            await nn2.transition_to_active("test")
        assert nn2.ha_state == HAState.STANDBY
        assert nn2.tailer is not None and nn2.tailer.running
        for jn in down:
            jn_factory.start(jn.name, jn.rpc, jn.http)
        await wait_until_async(
            f"nn2 to tail up to txid {last}", lambda: nn2.applied_txid >= last, 20
        )
        assert tree(nn2) == expected
        await nn2.transition_to_active("test")
        assert tree(nn2) == expected
    finally:
        await nn2.stop()


@pytest.mark.slow
async def test_failover_under_a_concurrent_workload_loses_no_acknowledged_op(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    _, nn1, nn2 = await pair(jn_factory, tmp_path, roll_txns=50)
    nodes = {"nn1": nn1, "nn2": nn2}
    acked: list[str] = []
    unexpected: list[str] = []  # refusals other than StandbyException
    stop = asyncio.Event()

    async def writer(k: int) -> None:
        rpcs = {n: Rpc(nodes[n].rpc_address()) for n in nodes}
        target = "nn1"
        i = 0
        try:
            while not stop.is_set():
                path = f"/w{k}/d{i}"
                try:
                    assert await rpcs[target].mkdirs(path)
                except RemoteError as e:
                    if e.class_name != STANDBY_EXCEPTION:
                        unexpected.append(f"{target} {path}: {e}")
                    target = "nn2" if target == "nn1" else "nn1"
                    await asyncio.sleep(0.01)  # a client's failover pause
                    continue
                acked.append(path)
                i += 1
        finally:
            for r in rpcs.values():
                await r.close()

    tasks = [asyncio.create_task(writer(k)) for k in range(8)]
    try:
        await wait_until_async("100 acknowledged mkdirs before failover", lambda: len(acked) >= 100)
        await nn1.transition_to_standby("failover")
        await nn2.transition_to_active("failover")
        before = len(acked)
        await wait_until_async(
            lambda: (
                f"100 acknowledged mkdirs after failover (writers done: "
                f"{[t.exception() if not t.cancelled() else 'cancelled' for t in tasks if t.done()]}; "
                f"unexpected errors: {unexpected[:3]})"
            ),
            lambda: len(acked) >= before + 100,
        )
        stop.set()
        await asyncio.gather(*tasks)
        assert not unexpected, unexpected[:5]
        on_nn2 = tree(nn2)
        missing = [p for p in acked if p not in on_nn2]
        assert not missing, f"acknowledged but lost: {missing[:10]}"
        await caught_up(nn1, nn2)
        assert tree(nn1) == on_nn2
    finally:
        stop.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_an_edit_the_standby_cannot_apply_stops_it(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    from qjm.client.quorum_journal_manager import QuorumJournalManager
    from qjm.editlog.ops import StartLogSegmentOp, encode_body
    from qjm.namenode.namespace import Namespace
    from qjm.namenode.types import Caller

    cfg, nn1, nn2 = await pair(jn_factory, tmp_path)
    try:
        rpc = Rpc(nn1.rpc_address())
        try:
            await workload(rpc, "ok")
        finally:
            await rpc.close()
        await caught_up(nn2, nn1)
        await nn1.stop()
        # Another writer logs a mkdir whose parent the namespace does not have.
        orphan = Namespace(superuser="x").plan_mkdirs(
            "/missing/child", Caller("x", (), True), 0o755, True, 1
        )[-1]
        q = QuorumJournalManager(cfg.shared_edits_uri(), None, cfg.qjournal)
        try:
            last = await q.recover_unfinalized_segments()
            stream = await q.start_log_segment(last + 1)
            stream.write_op(StartLogSegmentOp.OPCODE, encode_body(StartLogSegmentOp()))
            stream.write_op(orphan.OPCODE, encode_body(orphan))
            await stream.flush()
            await stream.close()
            await q.finalize_log_segment(last + 1, last + 2)
        finally:
            await q.close()
        await wait_until_async("nn2 to stop on the orphan mkdir", lambda: nn2.failed.is_set(), 20)
        assert nn2.ha_state == HAState.STOPPING
        assert nn2.exit_code == 1
        assert nn2.fatal_error is not None and f"txid {last + 2}" in nn2.fatal_error
        assert nn2.applied_txid == last + 1
        with pytest.raises(Exception, match="stopping"):
            await nn2.transition_to_active("test")
    finally:
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_kill_9_of_the_active_process_keeps_every_acknowledged_op(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    import signal

    from nn_harness import NNProcess, write_config

    jns = [jn_factory.start(f"jn{i}") for i in range(3)]
    cfg = make_config(jns, tmp_path, names=("nn1", "nn2"))
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    conf = write_config(cfg, tmp_path / "cluster.toml")
    procs = {n: NNProcess(conf, n, tmp_path) for n in ("nn1", "nn2")}
    for p in procs.values():
        p.start()
    rpcs: dict[str, Rpc] = {}
    try:
        for n, p in procs.items():
            rpcs[n] = Rpc((await p.wait_ready())["rpc"])
        await rpcs["nn1"].transition_to_active()
        acked: list[str] = []

        async def writer(k: int) -> None:
            i = 0
            while True:
                path = f"/k{k}/d{i}"
                await rpcs["nn1"].mkdirs(path)  # fails once nn1 is killed
                acked.append(path)
                i += 1

        tasks = [asyncio.create_task(writer(k)) for k in range(4)]
        await wait_until_async("80 acknowledged mkdirs on nn1", lambda: len(acked) >= 80)
        assert procs["nn1"].proc is not None
        procs["nn1"].proc.send_signal(signal.SIGKILL)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, Exception) for r in results)
        await rpcs["nn2"].transition_to_active()
        assert await rpcs["nn2"].state() == HAState.ACTIVE.value
        missing = [p for p in acked if await rpcs["nn2"].stat(p) is None]
        assert not missing, f"acknowledged but lost after kill -9: {missing[:10]}"
        assert await rpcs["nn2"].mkdirs("/after-kill")
        # The killed NameNode restarts (its name dir holds a torn in-progress segment),
        # follows nn2 as a standby, and takes over again with everything.
        await rpcs["nn1"].close()
        procs["nn1"].start()
        rpcs["nn1"] = Rpc((await procs["nn1"].wait_ready())["rpc"])
        assert await rpcs["nn1"].state() == HAState.STANDBY.value
        await rpcs["nn2"].transition_to_standby()
        await rpcs["nn1"].transition_to_active()
        assert await rpcs["nn1"].stat("/after-kill") is not None
        assert all([await rpcs["nn1"].stat(p) is not None for p in acked])
        assert await rpcs["nn1"].mkdirs("/back-on-nn1")
    finally:
        for r in rpcs.values():
            await r.close()
        for p in procs.values():
            p.stop()
