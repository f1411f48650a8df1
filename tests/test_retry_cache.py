"""The retry cache's rules (design §N.3), table by table, on an injected clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from qjm.config import ConfigError, config_from_dict
from qjm.editlog.ops import (
    AddBlockOp,
    AddOp,
    AppendOp,
    Block,
    CloseOp,
    DeleteOp,
    MkdirOp,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetPermissionsOp,
)
from qjm.namenode.namespace import Namespace
from qjm.namenode.retry_cache import (
    AT_MOST_ONCE,
    SERVED_AT_MOST_ONCE,
    RetryCache,
    State,
    created_status,
    logged_call,
    tracked,
)
from qjm.namenode.types import Caller

CID = bytes(range(16))
OTHER = bytes(range(1, 17))


@dataclass
class Clock:
    """A monotonic clock the test moves."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


def cache(expiry_s: float = 600.0, max_entries: int = 100) -> tuple[RetryCache, Clock]:
    """A cache on a test clock."""
    clock = Clock()
    return RetryCache(expiry_s, max_entries, clock), clock


@pytest.mark.parametrize(
    ("client_id", "call_id", "expected"),
    [
        (CID, 0, True),
        (CID, 2**31 - 1, True),
        (CID, -2, False),  # RpcConstants.INVALID_CALL_ID: logged by calls made without ids
        (CID, -3, False),  # the connection context's call id
        (b"", 5, False),  # RpcConstants.DUMMY_CLIENT_ID
        (b"x" * 15, 5, False),  # not a UUID: HDFS's entries take 16 bytes only
        (b"x" * 17, 5, False),
    ],
)
def test_which_calls_are_tracked(client_id: bytes, call_id: int, expected: bool) -> None:
    assert tracked(client_id, call_id) is expected


def test_served_methods_are_hdfs_at_most_once_ones_and_idempotent_ones_are_not() -> None:
    assert SERVED_AT_MOST_ONCE <= AT_MOST_ONCE
    # ClientProtocol marks these @Idempotent: a retry runs them again, no entry needed
    for idempotent in ("mkdirs", "complete", "setPermission", "setOwner", "setTimes", "truncate"):
        assert idempotent not in AT_MOST_ONCE


def test_a_new_call_adds_an_entry_and_the_same_ids_find_it() -> None:
    c, _ = cache()
    entry, new = c.lookup_or_add(CID, 7)
    assert new and entry.state is State.IN_PROGRESS
    assert (c.hits, c.updated) == (0, 1)
    again, new = c.lookup_or_add(CID, 7)
    assert again is entry and not new
    assert (c.hits, c.updated) == (1, 1)
    # another call id, or the same call id from another client, is another call
    for client_id, call_id in ((CID, 8), (OTHER, 7)):
        other, new = c.lookup_or_add(client_id, call_id)
        assert new and other is not entry
    assert (c.hits, c.updated, len(c)) == (1, 3, 3)


@pytest.mark.parametrize(
    ("age_s", "kept"),
    [(0.0, True), (599.999, True), (600.0, False), (3600.0, False)],
)
def test_an_entry_lives_expiry_s_from_when_it_was_added(age_s: float, kept: bool) -> None:
    c, clock = cache(expiry_s=600.0)
    entry, _ = c.lookup_or_add(CID, 1)
    RetryCache.set_state(entry, True)
    clock.now += age_s
    found, new = c.lookup_or_add(CID, 1)
    assert (found is entry) is kept
    assert new is not kept


def test_expired_entries_are_dropped_oldest_first_and_fresh_ones_kept() -> None:
    c, clock = cache(expiry_s=10.0)
    for call_id in range(3):
        c.lookup_or_add(CID, call_id)
        clock.now += 4.0  # entries added at 0, 4, 8; now 12
    assert c.get(CID, 0) is None  # 12 >= 0 + 10
    assert c.get(CID, 1) is not None and c.get(CID, 2) is not None
    assert len(c) == 2


@pytest.mark.parametrize("max_entries", [1, 2, 5])
def test_beyond_max_entries_the_oldest_go(max_entries: int) -> None:
    c, clock = cache(max_entries=max_entries)
    for call_id in range(max_entries + 3):
        c.lookup_or_add(CID, call_id)
        clock.now += 1.0
    assert len(c) == max_entries
    assert c.evicted == 3
    assert c.get(CID, 2) is None
    assert c.get(CID, max_entries + 2) is not None  # the newest stays
    assert c.get(CID, 3) is not None


def test_logged_calls_are_success_entries_that_replace_what_was_there() -> None:
    c, clock = cache(expiry_s=10.0)
    c.add_logged(CID, 4)
    e = c.get(CID, 4)
    assert e is not None and e.succeeded and e.payload is None
    clock.now += 5.0
    c.add_logged(CID, 4, "status")  # create with overwrite: OP_DELETE then OP_ADD, same ids
    e = c.get(CID, 4)
    assert e is not None and e.payload == "status"
    clock.now += 9.0  # 14 s after the first, 9 s after the second: kept from the second
    assert c.get(CID, 4) is e
    c.add_logged(b"", 4)  # untracked ids are not kept
    c.add_logged(CID, -2)
    assert (c.updated, len(c)) == (2, 1)


def test_clear_drops_everything_and_counts() -> None:
    c, _ = cache()
    for call_id in range(4):
        c.add_logged(CID, call_id)
    c.clear()
    assert (len(c), c.cleared) == (0, 1)
    assert c.stats() == {
        "CacheHit": 0,
        "CacheCleared": 1,
        "CacheUpdated": 4,
        "entries": 0,
        "evicted": 0,
    }


def test_a_cache_needs_positive_bounds() -> None:
    with pytest.raises(ValueError, match="expiry_s > 0"):
        RetryCache(0, 10)
    with pytest.raises(ValueError, match="max_entries >= 1"):
        RetryCache(1.0, 0)


def test_config_keys_default_to_hdfs_and_refuse_zero() -> None:
    s = config_from_dict({}).namenode
    assert (s.retry_cache_enabled, s.retry_cache_expiry_ms) == (True, 600_000)
    assert s.retry_cache_max_entries > 0
    off = config_from_dict({"namenode": {"retry_cache_enabled": False}}).namenode
    assert off.retry_cache_enabled is False
    for key in ("retry_cache_expiry_ms", "retry_cache_max_entries"):
        with pytest.raises(ConfigError, match=f"namenode.{key} must be at least 1"):
            config_from_dict({"namenode": {key: 0}})


# ------------------------------------------------------------ waiting for a call in progress


async def yield_to_loop(times: int = 5) -> None:
    """Let every ready task run (no time passes)."""
    for _ in range(times):
        await asyncio.sleep(0)


async def test_a_retry_waits_for_the_call_in_progress_and_gets_its_answer() -> None:
    c, _ = cache()
    first = await c.wait_for_completion(CID, 9)
    assert first is not None and first.state is State.IN_PROGRESS
    retry = asyncio.ensure_future(c.wait_for_completion(CID, 9))
    await yield_to_loop()
    assert not retry.done() and c.hits == 1
    RetryCache.set_state(first, True, "answer")
    got = await asyncio.wait_for(retry, 5)
    assert got is first and got.succeeded and got.payload == "answer"


async def test_after_a_failed_call_one_waiting_retry_runs_it_again_and_the_others_wait() -> None:
    c, _ = cache()
    first = await c.wait_for_completion(CID, 3)
    assert first is not None
    retries = [asyncio.ensure_future(c.wait_for_completion(CID, 3)) for _ in range(2)]
    await yield_to_loop()
    assert not any(r.done() for r in retries)
    RetryCache.set_state(first, False)  # e.g. a refusal: nothing to keep
    await yield_to_loop()
    done = [r for r in retries if r.done()]
    waiting = [r for r in retries if not r.done()]
    assert len(done) == 1 and len(waiting) == 1
    rerun = done[0].result()
    assert rerun is first and rerun.state is State.IN_PROGRESS  # this retry runs it again
    RetryCache.set_state(rerun, True, "second answer")
    last = await asyncio.wait_for(waiting[0], 5)
    assert last is first and last.succeeded and last.payload == "second answer"


async def test_untracked_ids_get_no_entry() -> None:
    c, _ = cache()
    assert await c.wait_for_completion(b"", 1) is None
    assert await c.wait_for_completion(CID, -2) is None
    assert len(c) == 0
    RetryCache.set_state(None, True)  # a no-op, as HDFS's


# ------------------------------------------------------------ entries from logged ops

PS = PermissionStatus("alice", "staff", 0o644)


def add_op(client_id: bytes = CID, call_id: int = 5, path: str = "/d/f") -> AddOp:
    """OP_ADD of an empty file."""
    return AddOp(
        inode_id=16390,
        path=path,
        replication=3,
        mtime=1_700_000_000_123,
        atime=1_700_000_000_123,
        block_size=134217728,
        permission_status=PS,
        client_name="DFSClient_1",
        client_machine="127.0.0.1",
        rpc_client_id=client_id,
        rpc_call_id=call_id,
    )


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (DeleteOp(path="/a", timestamp=1, rpc_client_id=CID, rpc_call_id=1), (CID, 1, None)),
        (
            RenameOldOp(src="/a", dst="/b", timestamp=1, rpc_client_id=CID, rpc_call_id=2),
            (CID, 2, None),
        ),
        (
            RenameOp(src="/a", dst="/b", timestamp=1, options=(), rpc_client_id=CID, rpc_call_id=3),
            (CID, 3, None),
        ),
        (
            AppendOp(
                path="/a", client_name="c", client_machine="m", rpc_client_id=CID, rpc_call_id=4
            ),
            (CID, 4, None),
        ),
        # ops written without the caller's ids (-2, empty) record no call
        (DeleteOp(path="/a", timestamp=1), None),
        (RenameOldOp(src="/a", dst="/b", timestamp=1, rpc_client_id=CID, rpc_call_id=-2), None),
        # ops of idempotent calls carry no ids; OP_ADD_BLOCK's are not read (HDFS)
        (MkdirOp(inode_id=16386, path="/a", timestamp=1, permission_status=PS), None),
        (SetPermissionsOp(src="/a", mode=0o755), None),
        (
            CloseOp(
                inode_id=0,
                path="/a",
                replication=1,
                mtime=1,
                atime=1,
                block_size=1,
                permission_status=PS,
            ),
            None,
        ),
        (
            AddBlockOp(path="/a", last_block=Block(1, 0, 1), rpc_client_id=CID, rpc_call_id=6),
            None,
        ),
    ],
)
def test_which_ops_record_a_call(op: object, expected: object) -> None:
    assert logged_call(op) == expected  # type: ignore[arg-type]


def test_op_add_records_the_created_files_status_as_the_namespace_answers_it() -> None:
    ns = Namespace(superuser="root")
    ns.apply(MkdirOp(inode_id=16386, path="/d", timestamp=1, permission_status=PS))
    op = add_op()
    ns.apply(op)
    call = logged_call(op)
    assert call is not None and call[:2] == (CID, 5)
    assert call[2] == created_status(op) == ns.stat("/d/f", Caller("root", (), True))


def test_add_op_puts_the_status_in_the_cache() -> None:
    c, _ = cache()
    assert c.add_op(add_op(call_id=11))
    assert not c.add_op(MkdirOp(inode_id=16386, path="/d", timestamp=1, permission_status=PS))
    e = c.get(CID, 11)
    assert e is not None and e.succeeded and e.payload == created_status(add_op(call_id=11))
