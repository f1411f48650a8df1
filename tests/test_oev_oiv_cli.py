"""`qjm oev` and `qjm oiv` end to end, through the main CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from qjm.cli.main import main
from qjm.namenode.image import write_image
from test_image_roundtrip import sample

EDITS = FIXTURES / "editsStored"
IMAGE = FIXTURES / "fsimage_0000000000000061740"


def test_oev_xml_then_binary_is_identical(tmp_path: Path) -> None:
    xml = tmp_path / "out.xml"
    out = tmp_path / "out.bin"
    assert main(["oev", "-i", str(EDITS), "-o", str(xml)]) == 0
    assert xml.read_bytes() == (FIXTURES / "editsStored.xml").read_bytes()
    assert main(["oev", "-i", str(xml), "-o", str(out), "-p", "binary"]) == 0
    assert out.read_bytes() == EDITS.read_bytes()


def test_oev_json_and_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oev", "-i", str(EDITS), "-p", "json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 121 and '"opcode":"OP_START_LOG_SEGMENT"' in lines[0]
    assert main(["oev", "-i", str(EDITS), "-p", "stats"]) == 0
    stats = capsys.readouterr().out
    assert "VERSION                             : -64" in stats
    assert "OP_SET_GENSTAMP_V2             ( 31): 16" in stats


def test_oev_reports_a_bit_flip_with_its_txid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = bytearray(EDITS.read_bytes())
    data[200] ^= 0x10
    bad = tmp_path / "edits"
    bad.write_bytes(bytes(data))
    assert main(["oev", "-i", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("qjm: error: ") and "txid" in err and "Traceback" not in err


def test_oev_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oev", "-i", str(tmp_path / "missing")]) == 1
    assert "cannot read" in capsys.readouterr().err
    bad = tmp_path / "x.xml"
    bad.write_text("<EDITS><EDITS_VERSION>-64</EDITS_VERSION><RECORD><OPCODE>OP_NOPE</OPCODE>")
    assert main(["oev", "-i", str(bad), "-p", "binary", "-o", str(tmp_path / "o")]) == 1
    assert "not well-formed" in capsys.readouterr().err


def test_oiv_delimited_and_xml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["oiv", "-i", str(IMAGE), "-p", "Delimited"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Path\tReplication") and len(lines) == 217
    assert "/tmp/files/0/0/foo" in {line.split("\t")[0] for line in lines}
    assert main(["oiv", "-i", str(IMAGE), "-p", "xml"]) == 0
    out = capsys.readouterr().out
    assert out.count("<inode><id>") == 216 and out.endswith("</fsimage>\n")
    assert main(["oiv", "-i", str(IMAGE), "-p", "FileDistribution"]) == 0
    assert "totalFiles = 100" in capsys.readouterr().out


def test_oiv_refuses_a_truncated_image(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fsimage_0000000000000001234"
    write_image(path, sample())
    assert main(["oiv", "-i", str(path), "-p", "json", "-o", str(tmp_path / "o.json")]) == 0
    assert len((tmp_path / "o.json").read_text().splitlines()) == 6
    path.write_bytes(path.read_bytes()[:-30])
    assert main(["oiv", "-i", str(path), "--no-md5"]) == 1
    err = capsys.readouterr().err
    assert "FileSummary" in err and "truncated" in err and "Traceback" not in err
