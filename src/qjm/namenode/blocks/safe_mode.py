"""Start-up safe mode as HDFS's BlockManagerSafeMode (design §B.8).

Pure: the caller passes the counts (complete blocks, those with min replicas, live
DataNodes) and the monotonic time.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

THRESHOLD_PCT = 0.999  # dfs.namenode.safemode.threshold-pct
MIN_DATANODES = 0  # dfs.namenode.safemode.min.datanodes
EXTENSION_S = 30.0  # dfs.namenode.safemode.extension
TURN_OFF_TIP = 'Use "hdfs dfsadmin -safemode leave" to turn safe mode off.'


class SafeModeStatus(enum.Enum):
    """BMSafeModeStatus, plus MANUAL for an operator's safe mode."""

    PENDING_THRESHOLD = "PENDING_THRESHOLD"
    EXTENSION = "EXTENSION"
    MANUAL = "MANUAL"
    OFF = "OFF"


@dataclass(frozen=True, slots=True)
class SafeModeCounts:
    """What safe mode is decided on."""

    block_safe: int  # complete blocks with at least min replicas
    block_total: int  # complete blocks
    live_datanodes: int


class SafeMode:
    """Start-up and manual safe mode (design §B.8)."""

    def __init__(
        self,
        *,
        threshold: float = THRESHOLD_PCT,
        min_datanodes: int = MIN_DATANODES,
        extension_s: float = EXTENSION_S,
    ) -> None:
        self.threshold = threshold
        self.min_datanodes = min_datanodes
        self.extension_s = extension_s
        self.status = SafeModeStatus.PENDING_THRESHOLD
        self.reached_at: float | None = None
        self.startup_done = False  # once left, start-up safe mode never returns

    @property
    def is_on(self) -> bool:
        """Whether the NameNode is in safe mode."""
        return self.status is not SafeModeStatus.OFF

    def block_threshold(self, c: SafeModeCounts) -> int:
        """Safe blocks needed: int(total * threshold) as HDFS computes it."""
        return int(c.block_total * self.threshold)

    def thresholds_met(self, c: SafeModeCounts) -> bool:
        """Enough safe blocks and enough live DataNodes."""
        return c.block_safe >= self.block_threshold(c) and c.live_datanodes >= self.min_datanodes

    def check(self, c: SafeModeCounts, now: float) -> SafeModeStatus:
        """Advance start-up safe mode with the current counts; returns the new status."""
        if self.status is SafeModeStatus.PENDING_THRESHOLD and self.thresholds_met(c):
            if self.extension_s > 0:
                self.status, self.reached_at = SafeModeStatus.EXTENSION, now
            else:
                self._off()
        if self.status is SafeModeStatus.EXTENSION:
            assert self.reached_at is not None
            if now - self.reached_at >= self.extension_s and self.thresholds_met(c):
                self._off()
        return self.status

    def _off(self) -> None:
        self.status, self.reached_at, self.startup_done = SafeModeStatus.OFF, None, True

    def enter(self) -> None:
        """An operator's `-safemode enter`: on until an operator leaves."""
        self.status, self.reached_at = SafeModeStatus.MANUAL, None

    def leave(self) -> None:
        """An operator's `-safemode leave`: off now, whatever the counts."""
        self._off()

    def tip(self, c: SafeModeCounts, now: float) -> str:
        """HDFS's one-line safe mode status (getSafeModeTip)."""
        if self.status is SafeModeStatus.OFF:
            return "Safe mode is OFF."
        if self.status is SafeModeStatus.MANUAL:
            return "Safe mode is ON. It was turned on manually. " + TURN_OFF_TIP
        need = self.block_threshold(c)
        if c.block_safe < need:
            msg = (
                f"The reported blocks {c.block_safe} needs additional {need - c.block_safe}"
                f" blocks to reach the threshold {self.threshold:.4f} of total blocks"
                f" {c.block_total}. "
            )
        else:
            msg = (
                f"The reported blocks {c.block_safe} has reached the threshold"
                f" {self.threshold:.4f} of total blocks {c.block_total}. "
            )
        if self.min_datanodes > 0:
            live = c.live_datanodes
            if live < self.min_datanodes:
                msg += (
                    f"The number of live datanodes {live} needs an additional"
                    f" {self.min_datanodes - live} live datanodes to reach the minimum"
                    f" number {self.min_datanodes}. "
                )
            else:
                msg += (
                    f"The number of live datanodes {live} has reached the minimum"
                    f" number {self.min_datanodes}. "
                )
        else:
            msg += "The minimum number of live datanodes is not required. "
        if self.status is SafeModeStatus.EXTENSION:
            assert self.reached_at is not None
            left = max(0, int(self.reached_at + self.extension_s - now))
            msg += (
                "In safe mode extension. Safe mode will be turned off automatically"
                f" in {left} seconds."
            )
        else:
            msg += (
                "Safe mode will be turned off automatically once the thresholds have been reached."
            )
        return "Safe mode is ON. " + msg
