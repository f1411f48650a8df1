"""The fsimage fixture (written by a real HDFS NameNode) against our reader, writer and views."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from conftest import FIXTURES
from qjm.namenode.image import (
    decode_string_table,
    encode_image,
    iter_inodes,
    load_image,
    md5_of_file,
    read_image,
    read_md5_file,
    read_section,
    read_summary_from_file,
    verify_md5,
)
from qjm.namenode.image.views import iter_delimited
from qjm.namenode.image.xml import image_to_xml

IMAGE = FIXTURES / "fsimage_0000000000000061740"
IMAGE_XML = FIXTURES / "fsimage_0000000000000061740.xml"


def test_md5_file_matches_in_hdfs_format() -> None:
    line = (FIXTURES / (IMAGE.name + ".md5")).read_text()
    assert line == f"{md5_of_file(IMAGE)} *{IMAGE.name}\n"
    assert read_md5_file(IMAGE) == "211ac2f198a2d8f0488638d3b11f5238"
    assert verify_md5(IMAGE)


def test_summary_and_sections() -> None:
    s = read_summary_from_file(IMAGE)
    assert (s.ondisk_version, s.layout_version, s.codec) == (1, -64, None)
    assert [x.name for x in s.sections] == [
        "NS_INFO",
        "ERASURE_CODING",
        "INODE",
        "INODE_DIR",
        "FILES_UNDERCONSTRUCTION",
        "SNAPSHOT",
        "INODE_REFERENCE",
        "SECRET_MANAGER",
        "CACHE_MANAGER",
        "STRING_TABLE",
    ]


def test_reads_every_inode() -> None:
    image = read_image(IMAGE)
    # The image's INODE header and the HDFS XML both say 216 inodes (100 files, 116 dirs).
    assert len(image.inodes) == 216
    assert sum(1 for i in image.inodes.values() if i.type == "FILE") == 100
    assert image.ns_info.namespace_id == 1157798435
    assert image.last_inode_id == 26700
    assert image.path(26493) == "/tmp/files/0/0/foo"
    assert len(image.paths()) == 216


def test_section_reader_matches_whole_image() -> None:
    s = read_summary_from_file(IMAGE)
    strings = decode_string_table(read_section(IMAGE, s.section("STRING_TABLE")))  # type: ignore[arg-type]
    inodes = list(iter_inodes(read_section(IMAGE, s.section("INODE")), strings))  # type: ignore[arg-type]
    assert inodes == list(read_image(IMAGE).inodes.values())


def test_writer_reproduces_the_image_byte_for_byte() -> None:
    data = IMAGE.read_bytes()
    assert encode_image(load_image(data).to_contents()) == data


def _inodes(root: ET.Element) -> dict[str, dict[str, str]]:
    out = {}
    for ino in root.iter("inode"):
        if ino.find("type") is None:
            continue
        fields = {c.tag: (c.text or "") for c in ino if len(c) == 0}
        fields["blocks"] = repr([tuple(x.text for x in b) for b in ino.findall("blocks/block")])
        out[fields["id"]] = fields
    return out


def test_xml_agrees_with_hdfs_oiv() -> None:
    """Same inodes, fields and tree as HDFS's XML of this image.

    The fixture's XML was dumped from an earlier save of this namespace (txid 61740, while
    the binary says 61969), in which /user (16388) had an older mtime; those are the only
    value differences. HDFS's older viewer also did not print the ERASURE_CODING section.
    """
    ours = ET.fromstring(image_to_xml(read_image(IMAGE)))
    text = IMAGE_XML.read_text()
    theirs = ET.fromstring(text[text.index("<fsimage>") :])
    a, b = _inodes(ours), _inodes(theirs)
    assert set(a) == set(b) and len(a) == 216
    diffs = {(i, k) for i in a for k in a[i].keys() | b[i].keys() if a[i].get(k) != b[i].get(k)}
    assert diffs == {("16388", "mtime")}
    dirs = lambda r: [[c.text for c in d] for d in r.iter("directory")]  # noqa: E731
    assert dirs(ours) == dirs(theirs)
    name_a = {c.tag: c.text for c in ours.find("NameSection")}  # type: ignore[union-attr]
    name_b = {c.tag: c.text for c in theirs.find("NameSection")}  # type: ignore[union-attr]
    assert {k for k in name_a if name_a[k] != name_b.get(k)} == {"txid"}
    assert len(re.findall("<inode><id>", image_to_xml(read_image(IMAGE)))) == 216


def test_delimited_has_one_line_per_inode_with_full_paths() -> None:
    lines = "".join(iter_delimited(read_image(IMAGE))).splitlines()
    assert lines[0].split("\t") == [
        "Path",
        "Replication",
        "ModificationTime",
        "AccessTime",
        "PreferredBlockSize",
        "BlocksCount",
        "FileSize",
        "NSQUOTA",
        "DSQUOTA",
        "Permission",
        "UserName",
        "GroupName",
    ]
    rows = [line.split("\t") for line in lines[1:]]
    assert len(rows) == 216 and all(len(r) == 12 for r in rows)
    paths = [r[0] for r in rows]
    assert len(set(paths)) == 216 and paths[0] == "/"
    assert all(p.startswith("/") for p in paths)
    foo = rows[paths.index("/tmp/files/0/0/foo")]
    assert foo[1] == "1" and foo[4:7] == ["536870912", "1", "4"]
    assert foo[9:] == ["-rw-r-----", "hdfs", "hdfs"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", foo[2])
