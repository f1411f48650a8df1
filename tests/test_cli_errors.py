"""Operator mistakes get one clear line and a non-zero exit (design §A.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_qjm
from qjm.config import config_from_dict
from qjm.errors import ConfigError

URI = "qjournal://127.0.0.1:1;127.0.0.1:2;127.0.0.1:3/ns1"


def check_error(r: object, *needles: str) -> str:
    """Exit 1 with one `qjm: error:` line that holds every needle."""
    rc, err = r.returncode, r.stderr  # type: ignore[attr-defined]
    assert rc == 1, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("qjm: error: "), err
    for n in needles:
        assert n in lines[0], (n, err)
    return str(lines[0])


@pytest.mark.slow
@pytest.mark.parametrize(("base", "count"), [("70000", "1"), ("65535", "3"), ("-5", "1")])
def test_cluster_up_refuses_ports_out_of_range(tmp_path: Path, base: str, count: str) -> None:
    r = run_qjm(
        "cluster", "up", "--dir", str(tmp_path / "c"), "--base-port", base, "--journalnodes", count
    )
    check_error(r, "--base-port", base, "65535")


@pytest.mark.slow
def test_binary_config_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "cluster.toml"
    cfg.write_bytes(b"\xff\xfe\x00\x01[cluster]\x80\x81")
    check_error(run_qjm("journal", "status", "--config", str(cfg)), str(cfg), "UTF-8")
    r = run_qjm("journalnode", "--config", str(cfg), "--name", "jn1")
    check_error(r, str(cfg), "UTF-8")


@pytest.mark.slow
def test_missing_config_is_not_ignored_when_uri_is_given(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    for cmd in ("status", "read", "format"):
        r = run_qjm("journal", cmd, "--uri", URI, "--config", str(missing))
        check_error(r, str(missing))


@pytest.mark.slow
def test_write_refuses_an_op_larger_than_the_limit() -> None:
    r = run_qjm("journal", "write", "--uri", URI, "--count", "1", "--size", "60000000")
    check_error(r, "--size 60000000", "52428783")


@pytest.mark.slow
@pytest.mark.parametrize("value", [0, 1, 99])
def test_sync_interval_below_the_minimum_is_refused(tmp_path: Path, value: int) -> None:
    with pytest.raises(ConfigError, match=rf"journalnode.sync_interval_ms.*{value}.*at least 100"):
        config_from_dict({"journalnode": {"sync_interval_ms": value}})
    cfg = tmp_path / "cluster.toml"
    cfg.write_text(f"[journalnode]\nsync_interval_ms = {value}\n")
    check_error(run_qjm("journal", "status", "--config", str(cfg)), "sync_interval_ms")
    r = run_qjm("journalnode", "--edits-dir", str(tmp_path / "e"), "--sync-interval-ms", str(value))
    check_error(r, "--sync-interval-ms", "at least 100")
