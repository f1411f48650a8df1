"""What a chaos run did and found: actions, calls by outcome, failover times, exits and
violations, as text for a terminal and as JSON."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qjm.testing.chaos.checker import Violation, spread


@dataclass
class Exit:
    """A daemon that exited without the nemesis killing it."""

    daemon: str
    action: int
    at: float
    expected: str  # why it may, "" when it may not
    log: str


@dataclass
class Summary:
    """What a run did and found."""

    seed: int
    actions_done: int = 0
    seconds: float = 0.0
    actions_by_kind: Counter[str] = field(default_factory=Counter)
    ops_by_outcome: Counter[str] = field(default_factory=Counter)
    ops_by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    reads_checked: int = 0
    retry_answers: int = 0
    probes: Counter[str] = field(default_factory=Counter)
    no_quorum_writes: Counter[str] = field(default_factory=Counter)  # by outcome
    checks: int = 0
    failovers: list[dict[str, Any]] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)

    def failover_times(
        self, kinds: tuple[str, ...] = ("kill-active-nn", "stop-active-nn")
    ) -> list[float]:
        """Seconds from the fault on the active to the first write the other acknowledged."""
        return [
            f["seconds"] for f in self.failovers if f["kind"] in kinds and f["seconds"] is not None
        ]

    def to_json(self) -> dict[str, Any]:
        """The summary as JSON-ready values."""
        return {
            "seed": self.seed,
            "actions": self.actions_done,
            "seconds": round(self.seconds, 1),
            "actions_by_kind": dict(sorted(self.actions_by_kind.items())),
            "ops_by_outcome": dict(sorted(self.ops_by_outcome.items())),
            "ops_by_kind": self.ops_by_kind,
            "reads_checked": self.reads_checked,
            "retry_answers": self.retry_answers,
            "deposed_active_probes": dict(sorted(self.probes.items())),
            "writes_while_two_journalnodes_down": dict(sorted(self.no_quorum_writes.items())),
            "checks": self.checks,
            "failover_s": spread(self.failover_times()),
            "takeover_after_zkfc_kill_s": spread(self.failover_times(("kill-active-zkfc",))),
            "failovers": self.failovers,
            "exits": [e.__dict__ for e in self.exits],
            "violations": [
                {"kind": v.kind, "message": v.message, "evidence": v.evidence, "action": v.action}
                for v in self.violations
            ],
        }

    def text(self) -> str:
        """The summary for a terminal."""
        fo = spread(self.failover_times())
        zk = spread(self.failover_times(("kill-active-zkfc",)))
        lines = [
            f"chaos summary: seed {self.seed}, {self.actions_done} actions in "
            f"{self.seconds:.0f}s, {self.checks} checks",
            "  actions by kind: "
            + ", ".join(f"{k} {n}" for k, n in sorted(self.actions_by_kind.items())),
            "  calls by outcome: "
            + ", ".join(f"{k} {n}" for k, n in sorted(self.ops_by_outcome.items()))
            + f" ({self.reads_checked} read answers checked; {self.retry_answers} "
            "acknowledgements answered by a retry of a call that had happened already)",
            "  calls by kind: "
            + "; ".join(
                f"{k} " + "/".join(f"{o} {n}" for o, n in sorted(c.items()))
                for k, c in sorted(self.ops_by_kind.items())
            ),
            f"  failover (active NameNode killed or stopped -> first write acknowledged by the "
            f"other): {spread_text(fo)}",
            f"  takeover after the active's ZKFC was killed: {spread_text(zk)}",
            "  writes made and answered while two JournalNodes were down: "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.no_quorum_writes.items())) or "none"),
            "  deposed-active probes (a read sent to the stopped active after the other took "
            "over and made a directory): "
            + (", ".join(f"{k} {n}" for k, n in sorted(self.probes.items())) or "none"),
        ]
        expected = [e for e in self.exits if e.expected]
        if expected:
            lines.append(
                f"  daemons that exited as expected: {len(expected)} ("
                + ", ".join(sorted({e.expected.split(":")[0] for e in expected}))
                + ")"
            )
        kinds = Counter(v.kind for v in self.violations)
        lines.append(
            f"  violations: {len(self.violations)}"
            + (
                " (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")"
                if kinds
                else ""
            )
        )
        lines += [v.text(self.seed) for v in self.violations]
        return "\n".join(lines)


def spread_text(s: dict[str, float | int | None]) -> str:
    """count, median and max as text."""
    if not s["count"]:
        return "none"
    return f"{s['count']}, median {s['median']}s, max {s['max']}s"


def write_summary(summary: Summary, directory: Path) -> Path:
    """Write DIR/chaos-summary.json; its path."""
    path = directory / "chaos-summary.json"
    path.write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    return path
