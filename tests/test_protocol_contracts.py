"""The wire contracts with one home: the /getJournal URL, namespace equality, journal ids."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Any

import pytest

from qjm.protocol.errors import InvalidRequestError
from qjm.protocol.identity import check_journal_id
from qjm.protocol.namespace import StorageInfo, namespace_info, same_namespace
from qjm.protocol.urls import (
    GetJournalQuery,
    get_journal_url,
    parse_get_journal_query,
    with_recovery_epoch,
)

URLS: dict[str, tuple[dict[str, Any], str]] = {
    "finalized": (
        {},
        "http://jn1:8480/getJournal?jid=edits&segmentTxId=7",
    ),
    "in progress": (
        {"in_progress_ok": True},
        "http://jn1:8480/getJournal?jid=edits&segmentTxId=7&inProgressOk=true",
    ),
    "a recovery's download": (
        {"in_progress_ok": True, "recovery_epoch": 3},
        "http://jn1:8480/getJournal?jid=edits&segmentTxId=7&inProgressOk=true&recoveryEpoch=3",
    ),
    "with the namespace (HDFS's storageInfo, in HDFS's place)": (
        {"in_progress_ok": True, "ns_info": namespace_info(12345, "CID-x", ctime=9)},
        "http://jn1:8480/getJournal?jid=edits&segmentTxId=7&storageInfo=-64%3A12345%3A9%3ACID-x"
        "&inProgressOk=true",
    ),
}


@pytest.mark.parametrize(
    ("kwargs", "url"), [pytest.param(*row, id=name) for name, row in URLS.items()]
)
def test_get_journal_url(kwargs: dict[str, Any], url: str) -> None:
    assert get_journal_url("http://jn1:8480", "edits", 7, **kwargs) == url
    assert get_journal_url("http://jn1:8480/", "edits", 7, **kwargs) == url


def _query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


PARSE: dict[str, tuple[str, GetJournalQuery | str]] = {
    "finalized": ("jid=edits&segmentTxId=7", GetJournalQuery("edits", 7)),
    "in progress": (
        "jid=edits&segmentTxId=7&inProgressOk=TRUE",
        GetJournalQuery("edits", 7, True),
    ),
    "recovery": (
        "jid=edits&segmentTxId=7&inProgressOk=true&recoveryEpoch=4",
        GetJournalQuery("edits", 7, True, 4),
    ),
    "no jid": ("segmentTxId=7", "missing query parameter jid"),
    "no txid": ("jid=edits", "missing query parameter segmentTxId"),
    "a txid that is no number": ("jid=edits&segmentTxId=abc", "segmentTxId='abc' is not a number"),
    "an epoch that is no number": (
        "jid=edits&segmentTxId=1&recoveryEpoch=x",
        "recoveryEpoch='x' is not a number",
    ),
    "storage info": (
        "jid=edits&segmentTxId=7&storageInfo=-66:12345:0:CID-a:b",
        GetJournalQuery("edits", 7, storage_info=StorageInfo(-66, 12345, 0, "CID-a:b")),
    ),
    "storage info with too few fields": (
        "jid=edits&segmentTxId=7&storageInfo=-66:12345:CID",
        "storageInfo='-66:12345:CID' is not layoutVersion:namespaceID:cTime:clusterID",
    ),
    "storage info with a namespace id that is no number": (
        "jid=edits&segmentTxId=7&storageInfo=-66:x:0:CID",
        "storageInfo='-66:x:0:CID' is not layoutVersion:namespaceID:cTime:clusterID",
    ),
}


@pytest.mark.parametrize(
    ("query", "expected"), [pytest.param(*row, id=name) for name, row in PARSE.items()]
)
def test_parse_get_journal_query(query: str, expected: GetJournalQuery | str) -> None:
    q = dict(urllib.parse.parse_qsl(query))
    if isinstance(expected, str):
        with pytest.raises(InvalidRequestError, match=expected):
            parse_get_journal_query(q)
    else:
        assert parse_get_journal_query(q) == expected


def test_built_urls_parse_back() -> None:
    url = get_journal_url("http://h:1", "j", 9, in_progress_ok=True, recovery_epoch=2)
    assert parse_get_journal_query(_query(url)) == GetJournalQuery("j", 9, True, 2)


def test_storage_info_is_hdfs_colon_separated_string() -> None:
    ns = namespace_info(777, "CID-y", ctime=5, layout_version=-66)
    info = StorageInfo.of(ns)
    assert str(info) == "-66:777:5:CID-y"  # StorageInfo.toColonSeparatedString()
    assert StorageInfo.parse(str(info)) == info
    assert same_namespace(info, ns)
    url = get_journal_url("http://h:1", "j", 9, ns_info=ns)
    assert parse_get_journal_query(_query(url)).storage_info == info


def test_with_recovery_epoch_replaces_the_epoch() -> None:
    url = get_journal_url("http://h:1", "j", 9, in_progress_ok=True, recovery_epoch=2)
    assert _query(with_recovery_epoch(url, 5))["recoveryEpoch"] == "5"
    assert with_recovery_epoch("", 5) == ""


@dataclass(frozen=True)
class Ns:
    namespace_id: int
    cluster_id: str


SAME: dict[str, tuple[Any, Any, bool]] = {
    "equal records": (Ns(1, "c"), Ns(1, "c"), True),
    "another namespace id": (Ns(1, "c"), Ns(2, "c"), False),
    "another cluster": (Ns(1, "c"), Ns(1, "d"), False),
}


@pytest.mark.parametrize(("a", "b", "same"), [pytest.param(*r, id=n) for n, r in SAME.items()])
def test_same_namespace(a: Any, b: Any, same: bool) -> None:
    assert same_namespace(a, b) is same


@pytest.mark.parametrize("jid", ["", "-x", ".x", "a/b", "current", "in_use.lock", "x" * 129])
def test_invalid_journal_ids(jid: str) -> None:
    with pytest.raises(InvalidRequestError):
        check_journal_id(jid)


def test_valid_journal_id() -> None:
    assert check_journal_id("my-journal_1.x") == "my-journal_1.x"
