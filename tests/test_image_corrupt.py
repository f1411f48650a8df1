"""Damaged or truncated images are refused with the section at fault named."""

from __future__ import annotations

from pathlib import Path

import pytest

from qjm.namenode.image import ImageError, load_image, read_image, read_summary, write_image
from qjm.namenode.image.format import SECTION_ORDER
from test_image_roundtrip import sample

KNOWN = {*SECTION_ORDER, "FileSummary", "header"}


@pytest.fixture(scope="module")
def image_bytes(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("img") / "fsimage_0000000000000001234"
    write_image(path, sample())
    return path.read_bytes()


def test_every_truncation_is_refused_with_a_section_name(image_bytes: bytes) -> None:
    for cut in range(1, len(image_bytes)):
        with pytest.raises(ImageError) as info:
            load_image(image_bytes[:cut])
        section = info.value.section
        assert section in KNOWN, (cut, str(info.value))
        if section != "header":
            assert section in str(info.value)


def test_a_section_past_the_end_is_named(image_bytes: bytes) -> None:
    # Drop bytes inside the INODE section but keep the footer: the index no longer fits.
    cut = image_bytes[:200] + image_bytes[260:]
    with pytest.raises(ImageError, match=r"section \w+ ") as info:
        load_image(cut)
    assert info.value.section in KNOWN


def test_garbage_inside_a_section_is_named(image_bytes: bytes) -> None:
    inode = read_summary(image_bytes).section("INODE")
    assert inode is not None
    data = bytearray(image_bytes)
    start = inode.offset + inode.length // 2
    data[start : start + 8] = b"\xff" * 8
    with pytest.raises(ImageError, match="section INODE") as info:
        load_image(bytes(data))
    assert info.value.section == "INODE"


def test_md5_mismatch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fsimage_0000000000000001234"
    write_image(path, sample())
    md5 = path.with_name(path.name + ".md5")
    md5.write_text("0" * 32 + f" *{path.name}\n")
    with pytest.raises(ImageError, match="does not match its MD5 file"):
        read_image(path)
    read_image(path, check_md5=False)


def test_not_an_image() -> None:
    with pytest.raises(ImageError, match="HDFSIMG1"):
        load_image(b"\xff\xff\xff\xc0\x00\x00\x00\x00 not an image")


def test_a_directory_entry_naming_a_missing_reference_is_refused() -> None:
    from qjm.namenode.image.sections import DirEntry, parents_of

    class Ref:
        referredId = 16390

    entries = [DirEntry(16385, (16386,), (0,)), DirEntry(16386, (16387,))]
    assert parents_of(entries, [Ref()]) == {16386: 16385, 16390: 16385, 16387: 16386}
    with pytest.raises(ImageError, match="refers to reference #1, INODE_REFERENCE has 1"):
        parents_of([DirEntry(16385, (), (1,))], [Ref()])
