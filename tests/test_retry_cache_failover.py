"""A retried rename after a kill -9 of the active mid-flush (design §N.3), with real processes:
ZooKeeper, 3 JournalNodes, 2 NameNodes and their ZKFCs, and the genuine Hadoop FsShell.

The NameNodes reach the JournalNodes through proxies (tests/jn_proxy.py). Held, the proxies
let the active's journal() of the rename reach every JournalNode but keep the JournalNodes'
answers back: the rename is on the journal, the active still waits for its quorum, and
FsShell has no answer. The active is then killed (-9), the ZKFCs fail over, and FsShell's
retry (same client id and call id: rename is @AtMostOnce) reaches the new active, whose
retry cache was rebuilt from the RPC ids logged with the rename.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ha_cluster import auto_cluster_behind_proxies, wait_single_active
from hadoop_clients import check, hadoop_fs, native_client
from qjm.cluster.launcher import daemons_of
from qjm.cluster.process import pid_alive
from qjm.testing.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def http_json(address: str, path: str = "/status") -> dict[str, Any]:
    """GET http://address/path as JSON."""
    with urllib.request.urlopen(f"http://{address}{path}", timeout=5) as r:
        data: dict[str, Any] = json.loads(r.read())
        return data


def written_everywhere(cluster: dict[str, Any], txid: int) -> bool:
    """Whether every JournalNode's journal holds txid (highest written txid)."""
    jns = [d for d in daemons_of(cluster).values() if d.get("kind") == "journalnode"]
    marks = [
        j["highest_written_txid"] for d in jns for j in http_json(d["http"])["journals"].values()
    ]
    return len(marks) == len(jns) and all(m >= txid for m in marks)


def test_fsshell_mv_retried_across_a_kill9_of_the_active_mid_flush_exits_0(
    tmp_path: Path,
) -> None:
    with auto_cluster_behind_proxies(tmp_path / "c") as (cluster, proxies, _):
        conf = Path(cluster["hadoop_conf"])
        active = wait_single_active(cluster, 60)
        check(hadoop_fs(conf, "-mkdir", "-p", "/r/src"))
        nn = daemons_of(cluster)[active]
        status = http_json(nn["http"])
        assert status["last_synced_txid"] == status["last_applied_txid"]
        rename_txid = status["last_applied_txid"] + 1

        proxies.hold()
        with ThreadPoolExecutor(1) as pool:
            mv = pool.submit(hadoop_fs, conf, "-mv", "/r/src", "/r/dst")
            wait_until(
                f"txid {rename_txid} (the rename) on every JournalNode",
                lambda: written_everywhere(cluster, rename_txid),
                timeout_s=60,
            )
            assert not mv.done()  # the rename is on the journal; FsShell has no answer
            os.kill(nn["pid"], signal.SIGKILL)
            wait_until(f"{active} gone", lambda: not pid_alive(nn["pid"]), timeout_s=30.0)
            proxies.release()  # the new active's journal() calls are answered
            result = mv.result(timeout=180)
        assert result.returncode == 0, f"mv exited {result.returncode}:\n{result.stderr}"

        new = wait_single_active(cluster, 60, exclude=[active])
        client = native_client(conf)
        assert client.get_file_info("/r/dst").isdir
        with pytest.raises(FileNotFoundError):
            client.get_file_info("/r/src")
        cache = http_json(daemons_of(cluster)[new]["http"])["retry_cache"]
        assert cache["CacheHit"] >= 1  # FsShell's retry found the rebuilt entry
