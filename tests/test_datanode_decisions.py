"""Which NameNode a DataNode obeys (design §B.12): HDFS's updateActorStatesFromHeartbeat."""

from __future__ import annotations

import pytest

from qjm.datanode.decisions import (
    ActiveClaims,
    Backoff,
    Claim,
    Disposition,
    command_disposition,
    report_due,
    update_from_heartbeat,
)

NONE = ActiveClaims()


@pytest.mark.parametrize(
    ("claims", "nn", "active", "txid", "want", "what"),
    [
        # nobody obeyed yet
        (NONE, "nn1", True, 0, ActiveClaims("nn1", 0), Claim.ACKNOWLEDGED),
        (NONE, "nn1", False, 50, NONE, Claim.STANDBY),
        # the obeyed active goes on, its txid rising or unchanged
        (ActiveClaims("nn1", 10), "nn1", True, 10, ActiveClaims("nn1", 10), Claim.CONTINUES),
        (ActiveClaims("nn1", 10), "nn1", True, 15, ActiveClaims("nn1", 15), Claim.CONTINUES),
        # the obeyed active going back in txids is no longer obeyed
        (ActiveClaims("nn1", 10), "nn1", True, 9, ActiveClaims(None, 10), Claim.STALE),
        # a takeover needs a txid strictly above the last claim
        (ActiveClaims("nn1", 10), "nn2", True, 11, ActiveClaims("nn2", 11), Claim.ACKNOWLEDGED),
        (ActiveClaims("nn1", 10), "nn2", True, 10, ActiveClaims("nn1", 10), Claim.STALE),
        (ActiveClaims("nn1", 10), "nn2", True, 3, ActiveClaims("nn1", 10), Claim.STALE),
        # a deposed active answering late, after the new one was heard: ignored
        (ActiveClaims("nn2", 20), "nn1", True, 12, ActiveClaims("nn2", 20), Claim.STALE),
        # the active steps down: nobody obeyed, the highest claim remembered
        (ActiveClaims("nn1", 10), "nn1", False, 12, ActiveClaims(None, 10), Claim.RELINQUISHED),
        # after that, a claim must still beat the remembered txid
        (ActiveClaims(None, 10), "nn1", True, 10, ActiveClaims(None, 10), Claim.STALE),
        (ActiveClaims(None, 10), "nn2", True, 11, ActiveClaims("nn2", 11), Claim.ACKNOWLEDGED),
        (ActiveClaims("nn1", 10), "nn2", False, 99, ActiveClaims("nn1", 10), Claim.STANDBY),
    ],
)
def test_update_from_heartbeat(
    claims: ActiveClaims, nn: str, active: bool, txid: int, want: ActiveClaims, what: Claim
) -> None:
    assert update_from_heartbeat(claims, nn, active, txid) == (want, what)


@pytest.mark.parametrize(
    ("claims", "nn", "kind", "want"),
    [
        (ActiveClaims("nn1", 5), "nn1", "invalidate", Disposition.EXECUTE),
        (ActiveClaims("nn1", 5), "nn1", "transfer", Disposition.EXECUTE),
        (ActiveClaims("nn1", 5), "nn1", "recover", Disposition.EXECUTE),
        (ActiveClaims("nn1", 5), "nn1", "finalize", Disposition.EXECUTE),
        (ActiveClaims("nn1", 5), "nn2", "invalidate", Disposition.DROP_STANDBY),
        (ActiveClaims("nn1", 5), "nn2", "transfer", Disposition.DROP_STANDBY),
        # a block recovery from a standby is never run (design §B.16)
        (ActiveClaims("nn1", 5), "nn2", "recover", Disposition.DROP_STANDBY),
        (NONE, "nn1", "recover", Disposition.DROP_STANDBY),
        (NONE, "nn1", "invalidate", Disposition.DROP_STANDBY),
        # registration is per NameNode: obeyed from a standby too
        (ActiveClaims("nn1", 5), "nn2", "register", Disposition.REREGISTER),
        (NONE, "nn1", "register", Disposition.REREGISTER),
        # block keys from every NameNode, the standby's too (design §S.9)
        (ActiveClaims("nn1", 5), "nn2", "key_update", Disposition.KEYS),
        (NONE, "nn1", "key_update", Disposition.KEYS),
        (ActiveClaims("nn1", 5), "nn1", "BalancerBandwidthCommand", Disposition.UNSUPPORTED),
        (ActiveClaims("nn1", 5), "nn2", "BalancerBandwidthCommand", Disposition.DROP_STANDBY),
    ],
)
def test_command_disposition(claims: ActiveClaims, nn: str, kind: str, want: Disposition) -> None:
    assert command_disposition(claims, nn, kind) == want


@pytest.mark.parametrize(
    ("failures", "want"), [(0, 0.0), (1, 0.5), (2, 1.0), (3, 2.0), (5, 8.0), (6, 10.0), (99, 10.0)]
)
def test_backoff(failures: int, want: float) -> None:
    assert Backoff(0.5, 10.0).delay(failures) == want


@pytest.mark.parametrize(
    ("now", "last", "interval", "want"),
    [(5.0, None, 100.0, True), (50.0, 0.0, 100.0, False), (100.0, 0.0, 100.0, True)],
)
def test_report_due(now: float, last: float | None, interval: float, want: bool) -> None:
    assert report_due(now, last, interval) is want
