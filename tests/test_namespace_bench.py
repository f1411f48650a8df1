"""The namespace benchmark runs end to end at a small size and reports every figure."""

from __future__ import annotations

import pytest
from benchmarks import nn_namespace


@pytest.mark.slow
def test_benchmark_small_run() -> None:
    r = nn_namespace.run(inodes=3000, ops=300, traced_inodes=1000)
    assert r["memory"]["inodes"] == 3000
    assert r["memory_traced"]["inodes"] == 1000
    assert 0 < r["memory_traced"]["bytes_per_inode"] < 1000
    assert r["startup"]["loaded_equal_size"] is True
    assert r["startup"]["image_bytes"] > 0
    for key in ("mkdirs_per_s", "create_complete_per_s", "getfileinfo_per_s"):
        assert r["in_process"][key] > 0
