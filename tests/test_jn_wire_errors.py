"""The segment files' errors (qjm.editlog.errors) leave the JournalNode as its wire errors.

The file layer knows nothing of the wire; the JournalNode maps its errors at the RPC
boundary (journalnode/rpc.py), so a writer still sees CorruptSegmentError, StorageError and
DownloadRangeError with the file layer's message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inmem_cluster import JID, formatted_cluster, recover, settle, write_txns, writer
from qjm.client.quorum_call import QuorumError
from qjm.editlog.errors import SegmentCorruptError, SegmentIOError, SegmentRangeError
from qjm.editlog.file_names import inprogress_name
from qjm.editlog.framing import HEADER_LEN, iter_ops
from qjm.errors import ConfigError, QjmError
from qjm.journalnode.rpc import to_wire_error
from qjm.protocol.errors import (
    CorruptSegmentError,
    DownloadRangeError,
    JournalError,
    StorageError,
    TxidGapError,
)


@pytest.mark.parametrize(
    ("raised", "wire", "code"),
    [
        (SegmentCorruptError("bad op at txid 4"), CorruptSegmentError, "CORRUPT_SEGMENT"),
        (SegmentIOError("bad op at txid 4"), StorageError, "STORAGE"),
        (SegmentRangeError("bad op at txid 4"), DownloadRangeError, "DOWNLOAD_RANGE"),
        (ConfigError("bad op at txid 4"), JournalError, "JOURNAL_ERROR"),
        (QjmError("bad op at txid 4"), JournalError, "JOURNAL_ERROR"),
    ],
)
def test_a_file_error_leaves_as_its_wire_error(
    raised: QjmError, wire: type[JournalError], code: str
) -> None:
    sent = to_wire_error(raised)
    assert type(sent) is wire
    assert (sent.code, str(sent)) == (code, "bad op at txid 4")


def test_a_wire_error_leaves_as_itself() -> None:
    gap = TxidGapError("expecting next txid 4")
    assert to_wire_error(gap) is gap


def flip_bit_in_txid(path: Path, txid: int) -> None:
    """Flip one bit in the body of the op with this txid, in place."""
    data = bytearray(path.read_bytes())
    for op in iter_ops(bytes(data), HEADER_LEN):
        if op.txid == txid:
            data[op.offset + 13 + len(op.body) // 2] ^= 0x04
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"txid {txid} not in {path}")


async def test_a_corrupt_segment_reaches_the_writer_as_corrupt_segment_error(
    tmp_path: Path,
) -> None:
    async with formatted_cluster(tmp_path) as c:
        q = await writer(c, 0)
        stream = await q.start_log_segment(1)
        await write_txns(stream, 1, 10)
        await settle(q)
        for i in range(2):  # a majority damaged: recovery fails, naming the damage
            flip_bit_in_txid(c.slots[i].edits_dir / JID / "current" / inprogress_name(1), 4)
        with pytest.raises(QuorumError) as info:
            await recover(c)
        corrupt = [e for e in info.value.errors.values() if isinstance(e, CorruptSegmentError)]
        assert len(corrupt) == 2, info.value.errors
        assert all("txid 4" in str(e) for e in corrupt), corrupt
