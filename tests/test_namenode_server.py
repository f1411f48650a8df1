"""The NameNode daemon on real JournalNode processes: start as standby, become active, serve
RPC, write-ahead sync, restart replay, a fatal quorum failure, HTTP status and metrics."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from conftest import JNFactory, run_qjm
from nn_harness import (
    NNProcess,
    Rpc,
    copy_name_dir,
    format_cluster,
    make_config,
    start_nn,
    tree,
    write_config,
)
from qjm.ipc import RemoteError
from qjm.namenode.errors import StandbyError
from qjm.namenode.server import os_user
from qjm.namenode.types import HAState

STANDBY_EXCEPTION = "org.apache.hadoop.ipc.StandbyException"


def three_jns(jn_factory: JNFactory) -> list[Any]:
    """Three JournalNode processes."""
    return [jn_factory.start(f"jn{i}") for i in range(3)]


@pytest.mark.slow
async def test_starts_standby_then_active_serves_mkdirs_and_getfileinfo(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    rpc = Rpc(nn.rpc_address())
    try:
        assert nn.ha_state == HAState.STANDBY
        assert await rpc.state() == HAState.STANDBY.value
        with pytest.raises(RemoteError) as refused:
            await rpc.stat("/")
        assert refused.value.class_name == STANDBY_EXCEPTION
        with pytest.raises(RemoteError) as refused:
            await rpc.mkdirs("/a")
        assert refused.value.class_name == STANDBY_EXCEPTION

        await rpc.transition_to_active()
        assert nn.ha_state == HAState.ACTIVE
        assert await rpc.state() == HAState.ACTIVE.value
        first = nn.last_txid()
        assert first >= 1  # the new segment's OP_START_LOG_SEGMENT
        assert await rpc.mkdirs("/a/b/c")
        st = await rpc.stat("/a/b")
        assert st is not None and st.fileType == st.IS_DIR
        assert await rpc.stat("/nope") is None
        assert nn.last_txid() > first
        # Write-ahead: an answered write is on the quorum.
        assert nn.synced_txid() == nn.last_txid()
        await rpc.touch("/a/f")
        assert nn.synced_txid() == nn.last_txid()
        st = await rpc.stat("/a/f")
        assert st is not None and st.fileType == st.IS_FILE

        await rpc.transition_to_active()  # idempotent
        assert nn.ha_state == HAState.ACTIVE
    finally:
        await rpc.close()
        await nn.stop()


@pytest.mark.slow
async def test_restart_replays_to_the_same_namespace(tmp_path: Path, jn_factory: JNFactory) -> None:
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    rpc = Rpc(nn.rpc_address())
    try:
        await nn.transition_to_active("test")
        for i in range(5):
            assert await rpc.mkdirs(f"/d{i}/sub")
            await rpc.touch(f"/d{i}/sub/f{i}")
        assert await rpc.delete("/d3")
        before = tree(nn)
        last = nn.last_txid()
    finally:
        await rpc.close()
        await nn.stop()
    assert "/d0/sub/f0" in before and "/d3" not in before

    again = await start_nn(cfg, "nn1")
    try:
        from qjm.namenode.server import NameNode, NameNodeStartupError

        with pytest.raises(NameNodeStartupError, match="in use"):
            await NameNode(cfg, "nn1").start()  # the name dir is locked by `again`
        assert again.ha_state == HAState.STANDBY
        assert tree(again) == before
        await again.transition_to_active("test")
        assert tree(again) == before
        assert again.last_txid() > last  # the segment closed at stop + a new one
        rpc = Rpc(again.rpc_address())
        try:
            assert await rpc.mkdirs("/after-restart")
            assert await rpc.stat("/d4/sub/f4") is not None
        finally:
            await rpc.close()
    finally:
        await again.stop()


@pytest.mark.slow
async def test_reads_on_a_standby_need_a_state_id(tmp_path: Path, jn_factory: JNFactory) -> None:
    from qjm.ipc.server import CallContext
    from qjm.namenode.errors import RetriableError

    cfg = make_config(
        three_jns(jn_factory), tmp_path, names=("nn1", "nn2"), observer_read_wait_ms=300
    )
    await format_cluster(cfg, "nn1")
    copy_name_dir(cfg, "nn1", "nn2")
    nn1 = await start_nn(cfg, "nn1")
    nn2 = await start_nn(cfg, "nn2")
    try:
        await nn1.transition_to_active("test")

        def ctx(state_id: int | None) -> CallContext:
            return CallContext("p", "getFileInfo", "u", b"", 1, 0, "127.0.0.1:1", state_id)

        with pytest.raises(StandbyError):
            await nn2.read(ctx(None))
        with pytest.raises(RetriableError):
            await nn2.read(ctx(nn1.last_txid() + 1000))
        rpc = Rpc(nn1.rpc_address())
        try:
            await rpc.mkdirs("/observed")
        finally:
            await rpc.close()
        wanted = nn1.last_txid()
        async with asyncio.timeout(10):
            ns = await nn2.read(ctx(wanted))
        assert nn2.applied_txid >= wanted
        assert ns.stat("/observed", nn2.caller_of(ctx(None))) is not None
        # The active serves reads with or without a state id.
        assert (await nn1.read(ctx(None))) is nn1.ns
    finally:
        await nn2.stop()
        await nn1.stop()


@pytest.mark.slow
async def test_http_status_metrics_and_page(tmp_path: Path, jn_factory: JNFactory) -> None:
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    try:
        async with aiohttp.ClientSession() as s, s.get(f"{nn.http_url()}/isActive") as r:
            assert (r.status, await r.text()) == (405, "I am not Active!")  # HDFS's answer
        await nn.transition_to_active("test")
        async with aiohttp.ClientSession() as s, s.get(f"{nn.http_url()}/isActive") as r:
            assert (r.status, await r.text()) == (200, "I am Active!")
        rpc = Rpc(nn.rpc_address())
        try:
            await rpc.mkdirs("/x/y")
            await rpc.touch("/x/y/z")
        finally:
            await rpc.close()
        async with aiohttp.ClientSession() as s:
            async with s.get(f"{nn.http_url()}/status") as r:
                assert r.status == 200
                st = await r.json()
            async with s.get(f"{nn.http_url()}/metrics") as r:
                assert r.status == 200
                metrics = await r.text()
            async with s.get(f"{nn.http_url()}/") as r:
                assert r.status == 200
                page = await r.text()
        assert st["name"] == "nn1"
        assert st["ha_state"] == "active"
        assert st["last_applied_txid"] == nn.last_txid()
        assert st["last_synced_txid"] == nn.last_txid()
        assert st["files"] == 1 and st["dirs"] == 3  # /, /x, /x/y
        assert st["inodes"] == 4
        assert len(st["journal_nodes"]) == 3
        assert all(j["reachable"] for j in st["journal_nodes"])
        assert {j["last_writer_epoch"] for j in st["journal_nodes"]} == {nn.qjm.epoch}
        assert 'qjm_namenode_ha_state{state="active"} 1.0' in metrics
        assert f"qjm_namenode_last_applied_txid {float(nn.last_txid())}" in metrics
        assert "qjm_namenode_files 1.0" in metrics
        assert "<html" in page and "active" in page and "JournalNodes" in page
    finally:
        await nn.stop()


@pytest.mark.slow
async def test_failed_quorum_sync_is_fatal_exit_1(tmp_path: Path, jn_factory: JNFactory) -> None:
    jns = three_jns(jn_factory)
    cfg = make_config(jns, tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    conf = write_config(cfg, tmp_path / "cluster.toml")
    proc = NNProcess(conf, "nn1", tmp_path)
    proc.start()
    try:
        info = await proc.wait_ready()
        rpc = Rpc(info["rpc"])
        try:
            await rpc.transition_to_active()
            assert await rpc.mkdirs("/before")
            jn_factory.stop(jns[0])
            jn_factory.stop(jns[1])
            with pytest.raises(Exception) as failed:
                await rpc.mkdirs("/after")
            assert not isinstance(failed.value, AssertionError)
        finally:
            await rpc.close()
        code = await proc.wait_exit(60)
        assert code == 1
        log = proc.log.read_text()
        assert log.count("FATAL") == 1, log
    finally:
        proc.stop()


@pytest.mark.slow
async def test_cli_runs_a_namenode_with_ready_file(tmp_path: Path, jn_factory: JNFactory) -> None:
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1", "nn2"))
    conf = write_config(cfg, tmp_path / "cluster.toml")
    done = run_qjm("namenode", "format", "--config", str(conf), "--id", "nn1")
    assert done.returncode == 0, done.stderr
    proc = NNProcess(conf, "nn1", tmp_path)
    proc.start()
    try:
        info = await proc.wait_ready()
        assert info["rpc"] == cfg.namenodes["nn1"].rpc_address
        assert info["http"] == cfg.namenodes["nn1"].http_address
        boot = await asyncio.to_thread(
            run_qjm, "namenode", "bootstrap-standby", "--config", str(conf), "--id", "nn2"
        )
        assert boot.returncode == 0, boot.stderr
        assert (Path(cfg.namenodes["nn2"].name_dir) / "current" / "VERSION").is_file()
        async with aiohttp.ClientSession() as s, s.get(f"http://{info['http']}/status") as r:
            st = json.loads(await r.text())
        assert st["ha_state"] == "standby"
    finally:
        assert proc.stop() == 0
    recovered = run_qjm("namenode", "recover", "--config", str(conf), "--id", "nn1")
    assert recovered.returncode == 0, recovered.stderr
    assert "loaded image at txid 0" in recovered.stdout
    again = run_qjm("namenode", "format", "--config", str(conf), "--id", "nn1")
    assert again.returncode == 1 and "force" in again.stderr
    bad = run_qjm("namenode", "--config", str(conf), "--id", "nn9")
    assert bad.returncode == 1 and "nn9" in bad.stderr


@pytest.mark.slow
async def test_a_read_waits_for_the_sync_of_every_logged_edit(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    from qjm.ipc.server import CallContext

    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    try:
        await nn.transition_to_active("test")
        el = nn.edit_log
        assert el is not None
        ctx = CallContext("p", "mkdirs", os_user(), b"", 1, 0, "127.0.0.1:1")
        caller = nn.caller_of(ctx)
        # A write logged and applied but not synced yet (its caller still waits) ...
        ops = nn.ns.plan_mkdirs("/pending", caller, 0o755, True, 1)
        txid = 0
        for op in ops:
            nn.ns.apply(op)
            txid = el.log(op)
        assert el.synced_txid < txid
        # ... a read that could show it is answered only once it is synced.
        ns = await nn.read(ctx)
        assert el.synced_txid >= txid
        assert ns.stat("/pending", caller) is not None
        # A write whose plan changes nothing (mkdirs of an existing dir) also waits.
        ops = nn.ns.plan_mkdirs("/pending2", caller, 0o755, True, 2)
        for op in ops:
            nn.ns.apply(op)
            txid = el.log(op)
        assert el.synced_txid < txid
        done = await nn.write(ctx, lambda ns: ns.plan_mkdirs("/pending", caller, 0o755, True, 3))
        assert done == []
        assert el.synced_txid >= txid
    finally:
        await nn.stop()


@pytest.mark.slow
async def test_superusers_are_the_os_user_and_the_superuser_group(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    import grp
    import pwd

    from qjm.ipc.server import CallContext

    me = os_user()
    other = next(
        (p for p in pwd.getpwall() if p.pw_name != me and p.pw_gid != 0),
        None,
    )
    if other is None:  # pragma: no cover - every Linux has daemon users
        pytest.skip("no second OS user to test group membership with")
    group = grp.getgrgid(other.pw_gid).gr_name
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",), superuser_group=group)

    def ctx(user: str) -> CallContext:
        return CallContext("p", "getFileInfo", user, b"", 1, 0, "127.0.0.1:1")

    from qjm.namenode.server import NameNode

    nn = NameNode(cfg, "nn1")
    mine = nn.caller_of(ctx(me))
    assert mine.superuser and mine.user == me
    theirs = nn.caller_of(ctx(other.pw_name))
    assert theirs.superuser and group in theirs.groups
    stranger = nn.caller_of(ctx("no-such-user-here"))
    assert not stranger.superuser and stranger.groups == ()
    plain = NameNode(
        make_config(three_jns_again(jn_factory), tmp_path / "b", names=("nn1",)), "nn1"
    )
    assert not plain.caller_of(ctx(other.pw_name)).superuser


def three_jns_again(jn_factory: JNFactory) -> list[Any]:
    """Three more JournalNode processes (a second cluster)."""
    return [jn_factory.start(f"jnb{i}") for i in range(3)]


@pytest.mark.slow
async def test_imagetransfer_refusals(tmp_path: Path, jn_factory: JNFactory) -> None:
    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    url = f"{nn.http_url()}/imagetransfer"
    try:
        async with aiohttp.ClientSession() as s:
            async with s.get(url, params={"getimage": "1", "txid": "latest"}) as r:
                assert r.status == 200
                assert r.headers["X-Image-Txid"] == "0"
                assert r.headers["X-Cluster-Id"] == "CID-nn-test"
                body = await r.read()
                import hashlib

                assert hashlib.md5(body).hexdigest() == r.headers["X-MD5-Digest"]
            async with s.get(url, params={"getimage": "1", "txid": "77"}) as r:
                assert r.status == 404 and "77" in await r.text()
            async with s.put(
                url, params={"txid": "5"}, data=body, headers={"X-MD5-Digest": "0"}
            ) as r:
                assert r.status == 403  # a standby takes no image
            await nn.transition_to_active("test")
            async with s.put(
                url,
                params={"txid": str(nn.synced_txid())},
                data=body,
                headers={"X-MD5-Digest": "0"},
            ) as r:
                assert r.status == 400 and "MD5" in await r.text()
            async with s.put(
                url, params={"txid": "0"}, data=body, headers={"X-MD5-Digest": "0"}
            ) as r:
                assert r.status == 409
    finally:
        await nn.stop()


@pytest.mark.slow
async def test_a_hostile_image_upload_is_refused_and_purges_nothing(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    """PUT /imagetransfer by a caller that is no standby: an image from the future, of another
    namespace, announced at another txid, or not an image at all is refused, and the active
    keeps every edit (a kept future image would let the retention purge them all)."""
    import hashlib

    from qjm.namenode.image import encode_image
    from qjm.namenode.storage import empty_image

    cfg = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(cfg, "nn1")
    nn = await start_nn(cfg, "nn1")
    url = f"{nn.http_url()}/imagetransfer"
    try:
        await nn.transition_to_active("test")
        rpc = Rpc(nn.rpc_address())
        try:
            for i in range(3):
                assert await rpc.mkdirs(f"/keep{i}")
        finally:
            await rpc.close()
        synced = nn.synced_txid()
        assert synced is not None and synced >= 4
        assert nn.storage is not None
        ours = nn.storage.read_ns_info().namespace_id

        def image(namespace_id: int, txid: int) -> tuple[bytes, str]:
            data = encode_image(empty_image(namespace_id, txid))
            return data, hashlib.md5(data).hexdigest()

        cases = [
            (synced + 10**9, *image(ours, synced + 10**9), 409, "ahead"),
            (synced, *image(ours + 1, synced), 400, "namespace"),
            (synced, *image(ours, synced - 1), 400, "announced"),
            (
                synced,
                b"HDFSIMG1" + b"\0" * 64,
                hashlib.md5(b"HDFSIMG1" + b"\0" * 64).hexdigest(),
                400,
                "decode",
            ),
        ]
        async with aiohttp.ClientSession() as s:
            for txid, data, md5, status, word in cases:
                async with s.put(
                    url, params={"txid": str(txid)}, data=data, headers={"X-MD5-Digest": md5}
                ) as r:
                    text = await r.text()
                    assert r.status == status, (txid, text)
                    assert word in text, text
        assert [t for t, _ in nn.storage.images()] == [0]
        assert {f"/keep{i}" for i in range(3)} <= set(tree(nn))
    finally:
        await nn.stop()


@pytest.mark.slow
async def test_initialize_shared_edits_moves_a_namespace_to_new_journalnodes(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    old = make_config(three_jns(jn_factory), tmp_path, names=("nn1",))
    await format_cluster(old, "nn1")
    nn = await start_nn(old, "nn1")
    try:
        await nn.transition_to_active("test")
        rpc = Rpc(nn.rpc_address())
        try:
            for i in range(4):
                assert await rpc.mkdirs(f"/m{i}/n")
                await rpc.touch(f"/m{i}/f")
        finally:
            await rpc.close()
        before = tree(nn)
    finally:
        await nn.stop()
    # The same name dir, new (empty) JournalNodes: the local edits seed the shared journal.
    new = make_config(three_jns_again(jn_factory), tmp_path, names=("nn1",))
    conf = write_config(new, tmp_path / "new.toml")
    done = await asyncio.to_thread(
        run_qjm, "namenode", "initialize-shared-edits", "--config", str(conf), "--id", "nn1"
    )
    assert done.returncode == 0, done.stderr
    assert "initialized" in done.stdout
    again = await start_nn(new, "nn1")
    try:
        assert tree(again) == before
        await again.transition_to_active("test")
        assert tree(again) == before
    finally:
        await again.stop()
