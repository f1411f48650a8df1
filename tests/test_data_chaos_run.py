"""A short data chaos run against real processes (design §B.21): seed 1764's four faults —
one of each kind: a DataNode killed, two killed at once, a bit flipped in a replica, the
active NameNode killed — under two writers; every acknowledged file must read back."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from qjm.testing.chaos.data_run import DATA_KINDS, DataRun, data_schedule, prepare

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SEED = 1764


def test_a_short_run_of_every_fault_kind_loses_nothing(tmp_path: Path) -> None:
    assert {a.kind for a in data_schedule(SEED, 4)} == set(DATA_KINDS)
    directory = tmp_path / "run"
    prepare(directory)
    out = io.StringIO()
    s = DataRun(SEED, directory, 4, writers=2, out=out).run()
    log = out.getvalue()
    assert s.files_acked > 0 and s.bytes_acked > 0, log
    assert len(s.actions) == 4 and s.replicas_flipped == 1, log
    assert s.healthy, f"{s.fsck_tail}\n{log}"
    assert (s.lost, s.changed, s.reads_wrong) == ([], [], []), log
    assert s.ok
