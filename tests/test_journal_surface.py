"""No module outside journalnode/journal.py reaches into a Journal's private members.

Accept-recovery, the syncer, the RPC handlers and the status use Journal's public surface
(design §J, "Where the rules live"); an underscore member is the journal's own business.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "qjm"
JOURNAL_MODULE = SRC / "journalnode" / "journal.py"
# What the tree calls a Journal where no annotation says so (lambdas, loop variables).
JOURNAL_NAMES = {"j", "journal"}


def _is_journal_annotation(node: ast.expr | None) -> bool:
    """True for `Journal`, `"Journal"` and `Journal | None`."""
    if node is None:
        return False
    if isinstance(node, ast.Name):
        return node.id == "Journal"
    if isinstance(node, ast.Constant):
        return node.value == "Journal"
    if isinstance(node, ast.BinOp):
        return _is_journal_annotation(node.left) or _is_journal_annotation(node.right)
    return False


def private_journal_uses(source: str) -> list[str]:
    """Each `x._name` in source where x is a Journal (by annotation or name): "line: x._name"."""
    tree = ast.parse(source)
    names = set(JOURNAL_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and _is_journal_annotation(node.annotation):
            names.add(node.arg)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _is_journal_annotation(node.annotation)
        ):
            names.add(node.target.id)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        if (isinstance(owner, ast.Name) and owner.id in names) or (
            isinstance(owner, ast.Attribute) and owner.attr == "journal"
        ):
            found.append((node.lineno, ast.unparse(node)))
    return [f"{line}: {text}" for line, text in sorted(found)]


def test_no_module_touches_a_journals_private_members() -> None:
    found = {
        str(path.relative_to(SRC)): uses
        for path in sorted(SRC.rglob("*.py"))
        if path != JOURNAL_MODULE and (uses := private_journal_uses(path.read_text()))
    }
    assert found == {}


def test_the_scan_finds_private_uses_by_annotation_and_by_name() -> None:
    source = (
        "def f(x: Journal, y: 'Journal', z: Journal | None, w: Other) -> None:\n"
        "    x._fetch(1)\n"
        "    y._check_formatted()\n"
        "    z._a\n"
        "    w._fine\n"
        "    x.__class__\n"
        "    x.public()\n"
        "g = lambda j: j._record_decision()\n"
        "def h(entry: Entry) -> None:\n"
        "    entry.journal._abort()\n"
        "    mine: Journal = get()\n"
        "    mine._state\n"
    )
    assert private_journal_uses(source) == [
        "2: x._fetch",
        "3: y._check_formatted",
        "4: z._a",
        "8: j._record_decision",
        "10: entry.journal._abort",
        "12: mine._state",
    ]
