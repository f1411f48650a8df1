"""Start-up safe mode (design §B.8)."""

from __future__ import annotations

import pytest

from qjm.namenode.blocks.safe_mode import SafeMode, SafeModeCounts, SafeModeStatus


@pytest.mark.parametrize(
    ("safe", "total", "live", "min_dn", "met"),
    [
        (0, 0, 0, 0, True),  # an empty namespace
        (998, 1000, 0, 0, False),  # int(1000 * 0.999) = 999
        (999, 1000, 0, 0, True),
        (1000, 1000, 1, 2, False),  # blocks fine, DataNodes short
        (1000, 1000, 2, 2, True),
    ],
)
def test_thresholds(safe: int, total: int, live: int, min_dn: int, met: bool) -> None:
    sm = SafeMode(min_datanodes=min_dn)
    assert sm.thresholds_met(SafeModeCounts(safe, total, live)) is met


def test_extension_then_off() -> None:
    sm = SafeMode(extension_s=30)
    c = SafeModeCounts(5, 10, 1)
    assert sm.check(c, 0) is SafeModeStatus.PENDING_THRESHOLD
    ok = SafeModeCounts(10, 10, 1)
    assert sm.check(ok, 100) is SafeModeStatus.EXTENSION
    assert "turned off automatically in 20 seconds" in sm.tip(ok, 110)
    assert sm.check(ok, 129) is SafeModeStatus.EXTENSION
    assert sm.check(ok, 130) is SafeModeStatus.OFF and not sm.is_on


def test_no_extension_leaves_at_threshold() -> None:
    sm = SafeMode(extension_s=0)
    assert sm.check(SafeModeCounts(1, 1, 0), 0) is SafeModeStatus.OFF


def test_extension_waits_while_thresholds_unmet() -> None:
    sm = SafeMode(extension_s=10)
    sm.check(SafeModeCounts(10, 10, 0), 0)
    assert sm.check(SafeModeCounts(3, 10, 0), 50) is SafeModeStatus.EXTENSION
    assert sm.check(SafeModeCounts(10, 10, 0), 51) is SafeModeStatus.OFF


def test_manual_enter_and_leave() -> None:
    sm = SafeMode(extension_s=0)
    sm.check(SafeModeCounts(0, 0, 0), 0)
    sm.enter()
    assert sm.check(SafeModeCounts(1, 1, 0), 1) is SafeModeStatus.MANUAL
    assert sm.tip(SafeModeCounts(1, 1, 0), 1).startswith(
        "Safe mode is ON. It was turned on manually."
    )
    sm.leave()
    assert not sm.is_on and sm.tip(SafeModeCounts(1, 1, 0), 1) == "Safe mode is OFF."


def test_tip_like_hdfs() -> None:
    sm = SafeMode()
    tip = sm.tip(SafeModeCounts(3, 10, 0), 0)
    assert tip == (
        "Safe mode is ON. The reported blocks 3 needs additional 6 blocks to reach the"
        " threshold 0.9990 of total blocks 10. The minimum number of live datanodes is"
        " not required. Safe mode will be turned off automatically once the thresholds"
        " have been reached."
    )
    sm2 = SafeMode(min_datanodes=3)
    assert "The number of live datanodes 1 needs an additional 2 live datanodes" in sm2.tip(
        SafeModeCounts(3, 10, 1), 0
    )
