"""Comments cite docs/design.md by a section that exists, never a document outside the repo.

Also checks that the architecture's table of HDFS roles (design §A.3) names modules and
classes that exist, so the table follows the code when files move.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "design.md"
SRC = ROOT / "src" / "qjm"
THIS = Path(__file__).resolve()

# Citations of documents a reader of the repository cannot open: tracker issues and their
# reviews, the contract and notes kept beside the checkout, the HDFS-3077 design's
# numbering ("design 2.9", its source rules "3a"-"3c").
OUTSIDE = re.compile(
    r"\b[Ii]ssue \d+|\bthe issue('s)?\b|[Rr]eview findings?\b|\bSPEC( §|\.md)"
    r"|\bdesign \d|hdfs-qjm-notes|hadoop-ipc-notes|\bseeds?/|\bseed 0\d\d"
    r"|\brules? 3[abc]\b"
)
# "§J.4", "§J.11-§J.13", "design §A" (a chapter).
CITED = re.compile(r"§([A-Z])(?:\.(\d+))?")
CHAPTER = re.compile(r"^## ([A-Z])\. ", re.M)
SECTION = re.compile(r"^### ([A-Z]\.\d+) ", re.M)
SUFFIXES = {".py", ".pyi", ".proto", ".md", ".toml", ".sh", ".txt"}
SKIP_PARTS = {".venv", "build", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


def repo_files() -> list[Path]:
    """Every text file of the repository a comment or a doc may sit in (no generated code)."""
    out = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    out += sorted((ROOT / "docs").glob("*.md"))
    for top in ("src", "tests", "benchmarks"):
        for p in sorted((ROOT / top).rglob("*")):
            if not p.is_file() or p.suffix not in SUFFIXES or SKIP_PARTS & set(p.parts):
                continue
            if p.name.endswith(("_pb2.py", "_pb2.pyi")) or p == THIS:
                continue
            out.append(p)
    return [p for p in out if p.is_file()]


def headings() -> tuple[set[str], set[str]]:
    """The chapters ("J") and sections ("J.4") of docs/design.md."""
    text = DESIGN.read_text(encoding="utf-8")
    return set(CHAPTER.findall(text)), set(SECTION.findall(text))


def outside_citations(text: str) -> list[str]:
    """Each line of text that cites a document outside the repository, as `line: text`."""
    return [
        f"{no}: {line.strip()}"
        for no, line in enumerate(text.splitlines(), 1)
        if OUTSIDE.search(line)
    ]


def missing_sections(text: str, chapters: set[str], sections: set[str]) -> list[str]:
    """Each `§X.n` (or `§X`) in text that docs/design.md has no heading for."""
    out = []
    for m in CITED.finditer(text):
        chapter, number = m.group(1), m.group(2)
        found = f"{chapter}.{number}" in sections if number else chapter in chapters
        if not found:
            out.append(m.group(0))
    return out


def test_the_checks_catch_what_they_are_for() -> None:
    chapters, sections = {"J"}, {"J.4"}
    for bad in (
        "# see issue 8, A3",
        "(review finding 4)",
        "the state the issue describes",
        "(SPEC §4)",
        "per SPEC.md",
        "choose the source by design 2.9",
        "more txns wins (rule 3c)",
        "see hdfs-qjm-notes.md",
        "seed 001 §2.3",
    ):
        assert outside_citations(bad), bad
    for good in ("# design §J.4 rule 2", "HDFS-3077's cases", "def issue(w: int)", "seed-3"):
        assert not outside_citations(good), good
    assert missing_sections("design §J.4, §J, §J.40 and §N.1", chapters, sections) == [
        "§J.40",
        "§N.1",
    ]


def test_no_comment_cites_a_document_outside_the_repository() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{hit}"
        for p in repo_files()
        for hit in outside_citations(p.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not found, (
        'cite docs/design.md by section ("design §J.4"), writing the section where the rule '
        "is not documented yet, instead of:\n" + "\n".join(found)
    )


def test_every_cited_section_is_a_heading_of_the_design() -> None:
    chapters, sections = headings()
    assert {"A", "J", "N", "D"} <= chapters
    found = [
        f"{p.relative_to(ROOT)}: {cite}"
        for p in repo_files()
        for cite in missing_sections(
            p.read_text(encoding="utf-8", errors="replace"), chapters, sections
        )
    ]
    assert not found, "docs/design.md has no such section:\n" + "\n".join(found)


def test_the_design_refers_to_its_own_sections() -> None:
    _, sections = headings()
    text = DESIGN.read_text(encoding="utf-8")
    # Plain references inside the document: "(J.5)", "N.1", "J.11 to J.16".
    refs = re.findall(r"(?<![\w.§/-])([AJND]\.\d+)(?![\w.]*\w)", text)
    assert refs, "the pattern finds the document's own references"
    assert sorted(set(refs) - sections) == []


@cache
def top_level_names(path: Path) -> frozenset[str]:
    """Classes, functions and assigned names at the top level of a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


def defined_in(name: str, where: Path) -> bool:
    """True when name is defined at the top level of the module, or of any module of the
    package, at where (a module split into a package of the same name counts too)."""
    package = where.with_suffix("") if where.suffix == ".py" else where
    modules = [where] if where.is_file() else []
    if package.is_dir():
        modules += sorted(package.rglob("*.py"))
    return any(name in top_level_names(m) for m in modules)


def role_table() -> list[tuple[str, str]]:
    """The rows of design §A.3's table: (Hadoop classes, the qjm cell)."""
    text = DESIGN.read_text(encoding="utf-8")
    m = re.search(r"^### A\.3 .*?(?=^### )", text, re.M | re.S)
    assert m, "docs/design.md has section A.3"
    rows = []
    for line in m.group(0).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and not set(cells[1]) <= {"-"} and cells[1] != "qjm":
            rows.append((cells[0], cells[1]))
    return rows


def test_the_role_table_names_modules_and_classes_that_exist() -> None:
    rows = role_table()
    assert len(rows) > 30
    wrong = []
    for hadoop, cell in rows:
        where: Path | None = None
        folder = SRC
        for token in re.findall(r"`([^`]+)`", cell):
            if re.fullmatch(r"[\w/]+(\.py|/)", token):
                where = (SRC / token) if "/" in token else (folder / token)
                if token.endswith("/"):
                    folder = where
                exists = where.exists() or where.with_suffix("").is_dir()
                if not exists:
                    wrong.append(f"{hadoop}: no module or package src/qjm/{token}")
            elif re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?", token) and where is not None:
                name = token.split(".")[0]
                if not defined_in(name, where):
                    wrong.append(f"{hadoop}: {where.relative_to(SRC)} defines no {name}")
    assert not wrong, "update design §A.3's table:\n" + "\n".join(wrong)


@pytest.mark.parametrize("text", ["qjm dfs", "/imagetransfer", "-format"])
def test_the_role_table_skips_what_is_not_code(text: str) -> None:
    assert not re.fullmatch(r"[\w/]+(\.py|/)", text)
    assert not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)?", text)
