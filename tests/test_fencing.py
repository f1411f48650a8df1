"""NodeFencer with real shell commands (and sshfence's clear failure without ssh keys)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from qjm.ha.fencing import (
    FenceMethod,
    FenceTarget,
    FencingConfigError,
    NodeFencer,
    parse_methods,
)

TARGET = FenceTarget("127.0.0.1", 8020, "ns1", "nn1")


def test_parse_methods_in_order_with_comments() -> None:
    text = "# fencing\nshell(/bin/echo a b)  # first\n\nsshfence\nsshfence(hdfs:2222)\n"
    assert parse_methods(text) == [
        FenceMethod("shell", "/bin/echo a b"),
        FenceMethod("sshfence"),
        FenceMethod("sshfence", "hdfs:2222"),
    ]
    assert parse_methods("org.apache.hadoop.ha.ShellCommandFencer(true)") == [
        FenceMethod("shell", "true")
    ]


@pytest.mark.parametrize("bad", ["shell()", "powershel(x)", "shell(a", "sshfence(a b)"])
def test_parse_errors_name_the_line(bad: str) -> None:
    with pytest.raises(FencingConfigError, match="line 2"):
        parse_methods(f"shell(true)\n{bad}")


async def test_shell_gets_the_target_in_its_environment(tmp_path: Path) -> None:
    out = tmp_path / "env"
    cmd = (
        f'echo "$target_host $target_port $target_address '
        f'$target_nameserviceid $target_namenodeid" > {out}'
    )
    fencer = NodeFencer.from_config(f"shell({cmd})")
    assert await fencer.fence(TARGET)
    assert out.read_text().split() == ["127.0.0.1", "8020", "127.0.0.1:8020", "ns1", "nn1"]
    assert fencer.last_errors == []


async def test_methods_are_tried_in_order_until_one_succeeds(tmp_path: Path) -> None:
    log = tmp_path / "log"
    fencer = NodeFencer.from_config(
        f"shell(echo one >> {log}; exit 3)\nshell(echo two >> {log})\nshell(echo three >> {log})"
    )
    assert await fencer.fence(TARGET)
    assert log.read_text().split() == ["one", "two"]
    assert len(fencer.last_errors) == 1 and "exited 3" in fencer.last_errors[0]


async def test_all_failing_means_not_fenced() -> None:
    fencer = NodeFencer.from_config("shell(false)\nshell(echo no way >&2; exit 1)")
    assert not await fencer.fence(TARGET)
    assert len(fencer.last_errors) == 2
    assert "no way" in fencer.last_errors[1]


async def test_no_methods_means_not_fenced() -> None:
    fencer = NodeFencer.from_config("# nothing\n")
    assert not await fencer.fence(TARGET)
    assert "no fencing method" in fencer.last_errors[0]


async def test_a_hanging_command_is_killed_at_the_timeout(tmp_path: Path) -> None:
    fencer = NodeFencer.from_config("shell(sleep 30)\nshell(true)", shell_timeout_s=0.5)
    t0 = time.monotonic()
    assert await fencer.fence(TARGET)  # the second method succeeds
    assert time.monotonic() - t0 < 10
    assert "timed out after 0.5 s" in fencer.last_errors[0]


async def test_sshfence_without_keys_fails_clearly() -> None:
    fencer = NodeFencer.from_config("sshfence")
    assert not await fencer.fence(TARGET)
    assert "dfs.ha.fencing.ssh.private-key-files" in fencer.last_errors[0]
