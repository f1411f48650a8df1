"""Downloading a segment for accept_recovery: a checked URL, a size cap, a total deadline.

The URL comes from a writer's request, so it is not trusted: only http(s), only this
journal's id and the accepted segment's start txid, no more bytes than the segment can
hold, the edit-log header checked before the rest is read, and one deadline for the whole
transfer (HDFS's dfs.edit.log.transfer.timeout) that a source trickling bytes cannot extend.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from qjm.editlog.framing import HEADER_LEN, MAX_OP_SIZE, read_header
from qjm.errors import EditLogError, describe_error
from qjm.protocol.errors import InvalidRequestError, StorageError
from qjm.protocol.urls import JID_PARAM, SEGMENT_TXID_PARAM
from qjm.security import tls
from qjm.security.gss import SaslError
from qjm.security.http import negotiate_headers

TRANSFER_TIMEOUT_SECONDS = 30.0  # HDFS's dfs.edit.log.transfer.timeout
MAX_FALLBACK_BYTES = 1 << 30  # cap when the segment state carries no byte length
CHUNK = 1 << 16


class FetchError(StorageError):
    """A segment download failed: bad source, too big, too slow, or not an edit log."""


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """What one download may take: bytes at most and seconds in total."""

    max_bytes: int
    deadline_seconds: float = TRANSFER_TIMEOUT_SECONDS


def size_cap(start_txid: int, end_txid: int, byte_length: int) -> int:
    """The most bytes a segment may have: its valid length, else txns x max op size (<= 1 GiB)."""
    if byte_length > 0:
        return byte_length
    # No length in the state (an older node or paxos record): HDFS's max op size per txn.
    txns = max(end_txid - start_txid + 1, 1)
    return min(HEADER_LEN + txns * MAX_OP_SIZE, MAX_FALLBACK_BYTES)


def check_segment_url(url: str, jid: str, segment_txid: int) -> urllib.parse.SplitResult:
    """Parse a from_url; refuse any scheme but http(s) and any other journal or segment."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise InvalidRequestError(
            f"refusing to fetch segment {segment_txid} of journal {jid!r} from {url!r}: "
            f"only http and https URLs are allowed, not {parts.scheme or 'no scheme'!r}"
        )
    if not parts.hostname:
        raise InvalidRequestError(f"refusing to fetch from {url!r}: the URL names no host")
    query = urllib.parse.parse_qs(parts.query)
    got_jid = query.get(JID_PARAM, [""])[-1]
    if got_jid != jid:
        raise InvalidRequestError(
            f"refusing to fetch from {url!r}: it names journal {got_jid!r}, "
            f"but this is journal {jid!r}"
        )
    got_txid = query.get(SEGMENT_TXID_PARAM, [""])[-1]
    if got_txid != str(segment_txid):
        raise InvalidRequestError(
            f"refusing to fetch from {url!r}: it names segment {got_txid!r}, "
            f"but the accepted segment starts at txid {segment_txid}"
        )
    return parts


class SegmentFetcher:
    """Runs downloads on the caller's thread; cancel_all() ends every one in progress."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: set[http.client.HTTPConnection] = set()
        self.cancelled = threading.Event()

    def fetch(self, url: str, dest: Path, limits: FetchLimits) -> int:
        """Download url into dest (fsynced) within limits; return the bytes written."""
        parts = urllib.parse.urlsplit(url)
        deadline = time.monotonic() + limits.deadline_seconds
        conn: http.client.HTTPConnection
        if parts.scheme == "https":  # verified against [security] ssl_ca (design §S.13)
            conn = http.client.HTTPSConnection(
                parts.netloc, timeout=limits.deadline_seconds, context=tls.client_context()
            )
        else:
            conn = http.client.HTTPConnection(parts.netloc, timeout=limits.deadline_seconds)
        with self._lock:
            if self.cancelled.is_set():
                raise FetchError(f"download of {url} cancelled: the JournalNode is stopping")
            self._active.add(conn)
        # Socket timeouts bound each read, not the transfer: a watchdog ends it at the
        # deadline however slowly the source sends its headers or its body.
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _shut(conn)

        watchdog = threading.Timer(limits.deadline_seconds, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            return _fetch(conn, parts, url, dest, limits, deadline, self.cancelled, expired)
        except FetchError:
            if expired.is_set():
                dest.unlink(missing_ok=True)
                raise FetchError(
                    f"downloading {url} took longer than {limits.deadline_seconds:g}s "
                    "(dfs.edit.log.transfer.timeout); giving up"
                ) from None
            raise
        finally:
            watchdog.cancel()
            with self._lock:
                self._active.discard(conn)
            conn.close()

    def cancel_all(self) -> None:
        """Fail every download in progress now and refuse new ones."""
        with self._lock:
            self.cancelled.set()
            for conn in self._active:
                _shut(conn)


def _shut(conn: http.client.HTTPConnection) -> None:
    """Wake any read blocked on the connection: it sees EOF or an error at once."""
    if conn.sock is not None:
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_RDWR)


def fetch_segment(url: str, dest: Path, limits: FetchLimits) -> int:
    """Download url into dest within limits with a one-off fetcher."""
    return SegmentFetcher().fetch(url, dest, limits)


def _fetch(
    conn: http.client.HTTPConnection,
    parts: urllib.parse.SplitResult,
    url: str,
    dest: Path,
    limits: FetchLimits,
    deadline: float,
    cancel: threading.Event,
    expired: threading.Event,
) -> int:
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        headers = negotiate_headers(parts.hostname or "localhost")  # SPNEGO (design §S.5)
    except SaslError as e:
        raise FetchError(f"downloading {url} failed: {e}") from None
    try:
        conn.request("GET", path, headers=headers)
        _set_timeout(conn, deadline)
        resp = conn.getresponse()
    except (OSError, http.client.HTTPException) as e:
        _stopped(url, cancel, expired)
        raise FetchError(f"downloading {url} failed: {describe_error(e)}") from None
    if resp.status != 200:
        body = resp.read(512).decode(errors="replace").strip()
        raise FetchError(f"downloading {url} failed: HTTP {resp.status} {body}")
    announced = resp.getheader("Content-Length")
    if announced is not None and announced.isdigit() and int(announced) > limits.max_bytes:
        raise FetchError(
            f"refusing {url}: it announces {announced} bytes, more than the "
            f"{limits.max_bytes} the accepted segment can hold"
        )
    return _copy(resp, conn, url, dest, limits, deadline, cancel, expired)


def _stopped(url: str, cancel: threading.Event, expired: threading.Event) -> None:
    """Raise if the download was ended from outside (stop or deadline)."""
    if cancel.is_set():
        raise FetchError(f"download of {url} cancelled: the JournalNode is stopping")
    if expired.is_set():
        raise FetchError(f"download of {url} passed its deadline")


def _copy(
    resp: http.client.HTTPResponse,
    conn: http.client.HTTPConnection,
    url: str,
    dest: Path,
    limits: FetchLimits,
    deadline: float,
    cancel: threading.Event,
    expired: threading.Event,
) -> int:
    total = 0
    head = b""
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            _stopped(url, cancel, expired)
            if time.monotonic() >= deadline:
                expired.set()
                _stopped(url, cancel, expired)
            _set_timeout(conn, deadline)
            try:
                chunk = resp.read1(CHUNK)
            except TimeoutError:
                expired.set()  # the read waited until the deadline
                _stopped(url, cancel, expired)
                raise
            except (OSError, http.client.HTTPException) as e:
                _stopped(url, cancel, expired)
                raise FetchError(
                    f"downloading {url} failed after {total} bytes: {describe_error(e)}"
                ) from None
            _stopped(url, cancel, expired)  # a shut-down socket reads as the end
            if not chunk:
                break
            total += len(chunk)
            if total > limits.max_bytes:
                raise FetchError(
                    f"refusing {url}: it sent more than the {limits.max_bytes} bytes the "
                    "accepted segment can hold"
                )
            if len(head) < HEADER_LEN:
                head += chunk[: HEADER_LEN - len(head)]
                if len(head) == HEADER_LEN:
                    _check_header(head, url)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        if len(head) < HEADER_LEN:
            _check_header(head, url)
        os.fsync(fd)
        return total
    except BaseException:
        os.close(fd)
        fd = -1
        dest.unlink(missing_ok=True)
        raise
    finally:
        if fd >= 0:
            os.close(fd)


def _check_header(head: bytes, url: str) -> None:
    try:
        read_header(head)
    except EditLogError as e:
        raise FetchError(f"{url} did not send an edit log: {e}") from None


def _set_timeout(conn: http.client.HTTPConnection, deadline: float) -> None:
    """Let no blocked read outlast the deadline of the whole transfer."""
    if conn.sock is not None:
        conn.sock.settimeout(max(deadline - time.monotonic(), 0.01))


def download_segment(url: str, dest: Path) -> None:
    """Fetch a whole finalized segment into dest: at most 1 GiB, within the transfer timeout."""
    fetch_segment(url, dest, FetchLimits(MAX_FALLBACK_BYTES))
