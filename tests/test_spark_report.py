"""What the reports say: a namespace report's checkpoint (which image, how old, how far
behind), charts left out when empty, and top lists that do not end in a cut through ties."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize(
    ("summary", "want"),
    [
        ({}, {}),  # a Delimited dump: no image to name
        (
            {"image": "fsimage_9", "image_txid": 9, "image_age_s": 3725},
            {"image": "fsimage_9 (txid 9, written 1 h 2 min before the report)"},
        ),
        (
            {"image": "f", "image_txid": 1, "image_age_s": 40, "namenode_txid": 6550,
             "namenode_inodes": 6550},
            {"image": "f (txid 1, written 40 s before the report)",
             "NameNode now": "txid 6,550, 6,550 inodes: this report is 6,549 transactions "
             "behind it (the next checkpoint catches up)"},
        ),
        (
            {"image": "f", "image_txid": 70, "namenode_txid": 70, "namenode_inodes": 3},
            {"image": "f (txid 70)", "NameNode now": "txid 70: the image is current"},
        ),
    ],
)  # fmt: skip
def test_a_namespace_report_names_its_checkpoint_and_how_far_behind_it_is(
    summary: dict[str, Any], want: dict[str, str]
) -> None:
    from qjm.spark.analyze import image_figures

    assert image_figures(summary) == want


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0 s"), (59, "59 s"), (60, "1 min"), (3599, "59 min"), (3600, "1 h 0 min"),
     (90_061, "1 days 1 h")],
)  # fmt: skip
def test_durations_read_as_a_person_says_them(seconds: int, text: str) -> None:
    from qjm.spark.analyze import duration_text

    assert duration_text(seconds) == text


def test_image_facts_take_the_txid_from_the_name_and_the_age_from_the_file(
    tmp_path: Path,
) -> None:
    import os

    from qjm.spark.plan import image_facts

    image = tmp_path / "fsimage_0000000000000000042"
    image.write_bytes(b"x")
    os.utime(image, (1000, 1000))
    assert image_facts(str(image), 4600) == {
        "image": image.name,
        "image_txid": 42,
        "image_age_s": 3600,
    }


@pytest.mark.parametrize(
    ("ops", "top", "kept", "tied"),
    [
        ([5, 4, 3], 5, [5, 4, 3], None),  # fewer rows than the list holds
        ([9, 7, 7, 7, 2], 3, [9], 7),  # the run of 7s crosses the cut: left out
        ([9, 8, 7, 6], 3, [9, 8, 7], 6),  # no tie at the cut: the rows as they are
        ([2, 2, 2, 2], 3, [2, 2, 2], 2),  # everything ties: the first rows
    ],
)
def test_a_top_list_does_not_end_in_a_cut_through_ties(
    ops: list[int], top: int, kept: list[int], tied: int | None
) -> None:
    from qjm.spark.analyze import cut_at_tie

    rows = [[f"/p{i}", n] for i, n in enumerate(ops)]
    got, got_tied = cut_at_tie(rows, top, 1)
    assert [r[1] for r in got] == kept and got_tied == (tied if len(ops) > top else None)


def test_an_empty_chart_is_left_out() -> None:
    from qjm.spark.analyze import _namespace_plots, has_data
    from qjm.spark.report import Plot

    assert not has_data(Plot("t", [], {}))
    assert not has_data(Plot("t", ["a", "b"], {"bytes": [0, 0]}))
    assert has_data(Plot("t", ["a"], {"x": [0], "y": [3]}))
    # a metadata-only namespace: directories by depth, no file, no byte
    depth = [[0, 0, 1, 0, 0], [1, 0, 40, 0, 0]]
    owners = [["hdfs", 0, 41, 0, 0]]
    titles = [p.title for p in _namespace_plots(depth, owners, [], [])]
    assert titles == ["Files and directories by depth"]
