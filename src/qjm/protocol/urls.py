"""The /getJournal URL a JournalNode serves segments on: built and parsed in one place.

HDFS's GetJournalEditServlet takes jid, segmentTxId, storageInfo (the fetcher's namespace;
a node formatted for another one answers 403) and inProgressOk; qjm adds recoveryEpoch,
with which a recovering writer's accepted source serves an in-progress segment that
readers may not see.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass

from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import InvalidRequestError
from qjm.protocol.namespace import StorageInfo

GET_JOURNAL_PATH = "/getJournal"
JID_PARAM = "jid"
SEGMENT_TXID_PARAM = "segmentTxId"
IN_PROGRESS_OK_PARAM = "inProgressOk"
STORAGE_INFO_PARAM = "storageInfo"  # layoutVersion:namespaceID:cTime:clusterID
# The recovering writer's epoch, with which accept_recovery fetches an in-progress segment
# readers may not see; it must be the source's promise.
RECOVERY_EPOCH_PARAM = "recoveryEpoch"


def get_journal_url(
    base: str,
    jid: str,
    segment_txid: int,
    *,
    in_progress_ok: bool = False,
    recovery_epoch: int | None = None,
    ns_info: pb.NamespaceInfoProto | None = None,
) -> str:
    """The URL of one segment of a journal on the JournalNode whose HTTP root is base.

    With ns_info the node serves it only if formatted for that namespace.
    """
    query: list[tuple[str, str | int]] = [(JID_PARAM, jid), (SEGMENT_TXID_PARAM, segment_txid)]
    if ns_info is not None:
        query.append((STORAGE_INFO_PARAM, str(StorageInfo.of(ns_info))))
    if in_progress_ok:
        query.append((IN_PROGRESS_OK_PARAM, "true"))
    if recovery_epoch is not None:
        query.append((RECOVERY_EPOCH_PARAM, recovery_epoch))
    return f"{base.rstrip('/')}{GET_JOURNAL_PATH}?{urllib.parse.urlencode(query)}"


def with_recovery_epoch(url: str, epoch: int) -> str:
    """The URL with its recoveryEpoch set to epoch (an empty URL stays empty)."""
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, v) for k, v in query if k != RECOVERY_EPOCH_PARAM]
    query.append((RECOVERY_EPOCH_PARAM, str(epoch)))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


@dataclass(frozen=True)
class GetJournalQuery:
    """What a /getJournal request asks for."""

    jid: str
    segment_txid: int
    in_progress_ok: bool = False
    recovery_epoch: int = 0  # 0: not a recovery's download
    storage_info: StorageInfo | None = None  # the fetcher's namespace; None: not checked


def _int_param(query: Mapping[str, str], name: str) -> int:
    raw = query.get(name)
    if raw is None:
        raise InvalidRequestError(f"missing query parameter {name}")
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequestError(f"query parameter {name}={raw!r} is not a number") from None


def parse_get_journal_query(query: Mapping[str, str]) -> GetJournalQuery:
    """The request a /getJournal query string makes; InvalidRequestError naming what is wrong."""
    jid = query.get(JID_PARAM, "")
    if not jid:
        raise InvalidRequestError(f"missing query parameter {JID_PARAM}")
    return GetJournalQuery(
        jid,
        _int_param(query, SEGMENT_TXID_PARAM),
        query.get(IN_PROGRESS_OK_PARAM, "false").lower() == "true",
        _int_param(query, RECOVERY_EPOCH_PARAM) if RECOVERY_EPOCH_PARAM in query else 0,
        _storage_info_param(query),
    )


def _storage_info_param(query: Mapping[str, str]) -> StorageInfo | None:
    raw = query.get(STORAGE_INFO_PARAM)
    if raw is None:
        return None
    try:
        return StorageInfo.parse(raw)
    except ValueError:
        raise InvalidRequestError(
            f"query parameter {STORAGE_INFO_PARAM}={raw!r} is not "
            "layoutVersion:namespaceID:cTime:clusterID"
        ) from None
