"""Table tests of the storage directory's file names (qjm.editlog.file_names)."""

from __future__ import annotations

import pytest

from qjm.editlog import file_names as N

PAD1 = "0000000000000000001"
PAD9 = "0000000000000000009"


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        (f"edits_{PAD1}-{PAD9}", (1, 9)),
        (f"edits_inprogress_{PAD9}", (9, None)),
        ("edits_1-9", None),  # not 19 digits
        (f"edits_inprogress_{PAD9}.empty", None),
        (f"edits_{PAD1}-{PAD9}.corrupt", None),
        (f"edits_inprogress_{PAD9}.epoch=3", None),  # a staged download
        (f"fsimage_{PAD9}", None),
        ("VERSION", None),
    ],
)
def test_parse_segment_name(name: str, parsed: tuple[int, int | None] | None) -> None:
    assert N.parse_segment_name(name) == parsed


@pytest.mark.parametrize(
    ("name", "txid"),
    [
        (f"fsimage_{PAD9}", 9),
        (f"fsimage_{PAD9}.md5", None),
        (f"fsimage_{PAD9}.x1y2.upload", None),
        ("fsimage_9", None),
        ("fsimage_ckpt_0000000000000000009", None),
    ],
)
def test_parse_image_name(name: str, txid: int | None) -> None:
    assert N.parse_image_name(name) == txid


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        (f"edits_inprogress_{PAD9}.epoch=3", (9, 3)),
        (f"edits_inprogress_{PAD9}.epoch=3.a1.download", None),  # still downloading
        (f"edits_inprogress_{PAD9}", None),
    ],
)
def test_parse_staged_name(name: str, parsed: tuple[int, int] | None) -> None:
    assert N.parse_staged_name(name) == parsed


def test_formatting_round_trips_through_parsing() -> None:
    assert N.finalized_name(1, 9) == f"edits_{PAD1}-{PAD9}"
    assert N.finalized_name(1, 9).startswith(N.finalized_prefix(1) + "-")
    assert N.inprogress_name(9) == f"edits_inprogress_{PAD9}"
    assert N.image_file_name(9) == f"fsimage_{PAD9}"
    assert N.parse_segment_name(N.finalized_name(12, 40)) == (12, 40)
    assert N.parse_segment_name(N.inprogress_name(41)) == (41, None)
    assert N.parse_image_name(N.image_file_name(61740)) == 61740
    assert N.parse_staged_name(N.staged_name(41, 7)) == (41, 7)
