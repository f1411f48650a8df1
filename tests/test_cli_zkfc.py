"""`qjm zkfc` and `qjm zkfc format-zk` as real processes, with a real ZooKeeper."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import run_qjm
from nn_fakes import FakeNameNode, ServedInThread
from qjm.config import load_config
from qjm.testing.wait import wait_until

pytestmark = pytest.mark.slow


def write_config(
    path: Path,
    quorum: str | None,
    addresses: list[str],
    fencing: str = "shell(true)",
    zkfc_port: int = 0,
) -> Path:
    ns = f"ns{uuid.uuid4().hex[:8]}"
    lines = [f'[cluster]\nnameservice = "{ns}"\n']
    for i, addr in enumerate(addresses, 1):
        lines.append(
            f'[namenodes.nn{i}]\nrpc_address = "{addr}"\nhttp_address = "127.0.0.1:0"\n'
            f'name_dir = "{path.parent / f"nn{i}"}"\n'
        )
    if quorum is not None:
        lines.append(f'[zookeeper]\nquorum = "{quorum}"\nsession_timeout_ms = 4000\n')
    fencing_toml = fencing.replace("\n", "\\n")
    lines.append(
        f'[zkfc]\nport = {zkfc_port}\nfencing_methods = "{fencing_toml}"\n'
        "health_check_interval_ms = 100\nhealth_rpc_timeout_ms = 2000\n"
    )
    path.write_text("\n".join(lines))
    load_config(path)  # a valid config
    return path


def test_format_zk_refuses_an_existing_znode_without_force(zookeeper: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.toml", zookeeper, ["127.0.0.1:1"])
    first = run_qjm("zkfc", "format-zk", "--config", str(cfg))
    assert first.returncode == 0, first.stderr
    assert "created in ZooKeeper" in first.stdout
    again = run_qjm("zkfc", "format-zk", "--config", str(cfg))
    assert again.returncode == 2
    assert "already exists" in again.stderr and "--force" in again.stderr
    forced = run_qjm("zkfc", "format-zk", "--config", str(cfg), "--force")
    assert forced.returncode == 0, forced.stderr


def test_clear_errors(zookeeper: str, tmp_path: Path) -> None:
    no_quorum = write_config(tmp_path / "a.toml", None, ["127.0.0.1:1"])
    r = run_qjm("zkfc", "--config", str(no_quorum), "--id", "nn1")
    assert r.returncode == 1 and "zookeeper.quorum is not set" in r.stderr

    no_fencer = write_config(tmp_path / "b.toml", zookeeper, ["127.0.0.1:1"], fencing="")
    r = run_qjm("zkfc", "--config", str(no_fencer), "--id", "nn1")
    assert r.returncode == 4 and "zkfc.fencing_methods is empty" in r.stderr

    bad_fencer = write_config(tmp_path / "c.toml", zookeeper, ["127.0.0.1:1"], fencing="kill(x)")
    r = run_qjm("zkfc", "--config", str(bad_fencer), "--id", "nn1")
    assert r.returncode == 1 and "zkfc.fencing_methods" in r.stderr and "kill" in r.stderr

    unformatted = write_config(tmp_path / "d.toml", zookeeper, ["127.0.0.1:1"])
    r = run_qjm("zkfc", "--config", str(unformatted), "--id", "nn1")
    assert r.returncode == 3 and "qjm zkfc format-zk" in r.stderr

    r = run_qjm("zkfc", "--config", str(unformatted), "--id", "nn9")
    assert r.returncode == 1 and "namenodes.nn9" in r.stderr
    assert "Traceback" not in r.stderr


def test_two_zkfc_processes_make_one_namenode_active(zookeeper: str, tmp_path: Path) -> None:
    nns = [
        FakeNameNode(standby=True, automatic_failover=True),
        FakeNameNode(standby=True, automatic_failover=True),
    ]
    with ServedInThread(*nns) as served:
        cfg = write_config(tmp_path / "c.toml", zookeeper, served.addresses)
        assert run_qjm("zkfc", "format-zk", "--config", str(cfg)).returncode == 0
        procs = []
        try:
            for i in (1, 2):
                ready = tmp_path / f"zkfc{i}.json"
                log = open(tmp_path / f"zkfc{i}.log", "w")  # noqa: SIM115
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "qjm",
                            "zkfc",
                            "--config",
                            str(cfg),
                            "--id",
                            f"nn{i}",
                            "--ready-file",
                            str(ready),
                        ],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env={**os.environ, "PYTHONUNBUFFERED": "1"},
                    )
                )
                log.close()
            for i in (1, 2):
                ready = tmp_path / f"zkfc{i}.json"
                wait_until(f"zkfc{i} ready", ready.exists, timeout_s=30.0)
                assert json.loads(ready.read_text())["namenode"] == served.addresses[i - 1]
            wait_until(
                "one active, one standby",
                lambda: (
                    sorted(nn.standby for nn in nns) == [False, True]
                    and all(nn.transitions for nn in nns)
                ),
                timeout_s=30.0,
            )
            active = next(i for i, nn in enumerate(nns) if not nn.standby)
            assert nns[active].transitions == [("active", "REQUEST_BY_ZKFC")]
            # the active's ZKFC stops: its lock goes, the other takes over
            procs[active].send_signal(signal.SIGTERM)
            assert procs[active].wait(timeout=30) == 0
            wait_until("the other active", lambda: not nns[1 - active].standby, timeout_s=30.0)
            assert nns[active].transitions[-1] == ("standby", "REQUEST_BY_ZKFC")  # fenced
            assert nns[active].standby
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        p.wait(timeout=30)
        assert procs[1 - active].returncode == 0
