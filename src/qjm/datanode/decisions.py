"""Which NameNode a DataNode obeys, as pure rules (design §B.12).

HDFS's BPOfferService.updateActorStatesFromHeartbeat and processCommandFromActor: a
DataNode takes block commands only from the NameNode whose latest heartbeat answer claims
ACTIVE; a NameNode that claims ACTIVE while another holds that role takes over only with a
txid above the highest txid any active claim showed, so a deposed active (fenced by the
journal, it cannot write past the new active's first txid) is ignored however late its
answers arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class ActiveClaims:
    """What the DataNode believes of its NameNodes' active claims."""

    active: str | None = None  # the NameNode obeyed, if any
    last_claim_txid: int = -1  # the highest txid an obeyed active claim carried


class Claim(Enum):
    """What one heartbeat answer's HA status did to ActiveClaims."""

    ACKNOWLEDGED = "acknowledged"  # a first active, or a takeover at a higher txid
    CONTINUES = "continues"  # the obeyed active claims ACTIVE again
    STALE = "stale"  # claims ACTIVE with a txid not above the last claim: ignored
    RELINQUISHED = "relinquished"  # the obeyed active now says STANDBY
    STANDBY = "standby"  # another NameNode says STANDBY: nothing changes


def update_from_heartbeat(
    claims: ActiveClaims, namenode: str, claims_active: bool, txid: int
) -> tuple[ActiveClaims, Claim]:
    """The claims after namenode's heartbeat answer (its HA state and txid), and what it did.

    A NameNode not obeyed now is obeyed once it claims ACTIVE with a txid strictly above
    last_claim_txid (HDFS's rule; a new active has written at least its segment's start
    op, so its txid is above anything the old one wrote). The obeyed one keeps the role
    while it claims ACTIVE with a txid not below last_claim_txid; one that goes back in
    txids (it lost edits, or it is not the node it was) is no longer obeyed.
    """
    obeyed = claims.active == namenode
    if claims_active:
        if obeyed:
            if txid < claims.last_claim_txid:
                return ActiveClaims(None, claims.last_claim_txid), Claim.STALE
            return ActiveClaims(namenode, txid), Claim.CONTINUES
        if txid <= claims.last_claim_txid:
            return claims, Claim.STALE
        return ActiveClaims(namenode, txid), Claim.ACKNOWLEDGED
    if obeyed:
        return ActiveClaims(None, claims.last_claim_txid), Claim.RELINQUISHED
    return claims, Claim.STANDBY


class Disposition(Enum):
    """What a DataNode does with one command from one NameNode."""

    EXECUTE = "execute"  # hand it to the command handler
    REREGISTER = "reregister"  # register again with the NameNode that sent it
    KEYS = "keys"  # block keys: taken from any NameNode (design §S.9)
    DROP_STANDBY = "drop_standby"  # from a NameNode not obeyed now: dropped and counted
    UNSUPPORTED = "unsupported"  # a kind qjm's DataNode does not carry out: logged


# Command kinds (DatanodeCommandProto.Type names and BlockCommand actions).
BLOCK_KINDS = frozenset({"transfer", "invalidate", "recover", "finalize"})


def command_disposition(claims: ActiveClaims, namenode: str, kind: str) -> Disposition:
    """What to do with a command of kind from namenode (HDFS's processCommandFromActor).

    A register command is obeyed from any NameNode (registration is per NameNode) and key
    updates are taken from any (a DataNode keeps every NameNode's keys, design §S.9); block
    commands only from the obeyed active.
    """
    if kind == "register":
        return Disposition.REREGISTER
    if kind == "key_update":
        return Disposition.KEYS
    if claims.active != namenode:
        return Disposition.DROP_STANDBY
    if kind in BLOCK_KINDS:
        return Disposition.EXECUTE
    return Disposition.UNSUPPORTED


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff between tries to reach a NameNode that does not answer."""

    initial_s: float
    max_s: float

    def delay(self, failures: int) -> float:
        """Seconds to wait after the given number of failures in a row (0: none)."""
        if failures <= 0:
            return 0.0
        return min(self.max_s, self.initial_s * float(1 << min(failures - 1, 30)))


def report_due(now: float, last_report: float | None, interval_s: float) -> bool:
    """Whether a periodic full block report is due (never sent yet: due at once)."""
    return last_report is None or now - last_report >= interval_s
