"""The import-layer check (tests/import_layers.py): the tree keeps its layers, and the check
finds an upward import, an import between independent layers, a module in no layer and a
cycle, on small trees written for each case."""

from __future__ import annotations

from pathlib import Path

import pytest

from import_layers import Contract, check, main

ROOT = Path(__file__).resolve().parent.parent

# A small tree: qjm.cli on top, the daemons qjm.journalnode | qjm.namenode, qjm.errors below.
CONTRACT = Contract(
    layers=(
        ("qjm.cli",),
        ("qjm.journalnode", "qjm.namenode"),
        ("qjm.errors",),
        ("qjm",),
    )
)
BASE = {
    "qjm/__init__.py": "",
    "qjm/errors.py": "class QjmError(Exception): ...\n",
    "qjm/cli/__init__.py": "",
    "qjm/cli/main.py": "from qjm.journalnode import node\nfrom qjm.errors import QjmError\n",
    "qjm/journalnode/__init__.py": "",
    "qjm/journalnode/node.py": "from qjm.errors import QjmError\nfrom . import rpc\n",
    "qjm/journalnode/rpc.py": "from typing import TYPE_CHECKING\n",
    "qjm/namenode/__init__.py": "",
    "qjm/namenode/server.py": "import qjm.errors\n",
}


def write_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_the_tree_keeps_its_layers() -> None:
    assert main([str(ROOT)]) == 0


def test_a_sound_small_tree_passes(tmp_path: Path) -> None:
    assert check(write_tree(tmp_path, BASE), CONTRACT) == []


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        # A daemon importing the command line, at the top of the module or in a function.
        (
            {"qjm/journalnode/rpc.py": "from qjm.cli.main import x\n"},
            "qjm.journalnode.rpc (line 1) imports qjm.cli.main: qjm.cli is a layer above "
            "qjm.journalnode",
        ),
        (
            {"qjm/namenode/server.py": "def f():\n    import qjm.cli.main\n"},
            "qjm.namenode.server (line 2) imports qjm.cli.main: qjm.cli is a layer above",
        ),
        # An annotation-only import still breaks the layers.
        (
            {
                "qjm/errors.py": "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from qjm.namenode import server\n"
            },
            "qjm.errors (line 3) imports qjm.namenode.server: qjm.namenode is a layer above",
        ),
        # Independent layers may not import each other; a relative import resolves.
        (
            {"qjm/namenode/server.py": "from ..journalnode import node\n"},
            "qjm.namenode.server (line 1) imports qjm.journalnode.node: qjm.namenode and "
            "qjm.journalnode are independent layers",
        ),
        # Every module needs a layer (the root entry holds only the root package).
        ({"qjm/logs.py": ""}, "qjm.logs is in no layer"),
        # A cycle between two modules of a package, through a function-level import.
        (
            {"qjm/journalnode/rpc.py": "def f():\n    from qjm.journalnode.node import x\n"},
            "import cycle in qjm.journalnode: qjm.journalnode.node imports "
            "qjm.journalnode.rpc; qjm.journalnode.rpc imports qjm.journalnode.node",
        ),
    ],
)
def test_the_check_names_what_breaks_the_contract(
    tmp_path: Path, changed: dict[str, str], says: str
) -> None:
    problems = check(write_tree(tmp_path, {**BASE, **changed}), CONTRACT)
    assert any(says in p for p in problems), problems


def test_an_annotation_only_back_reference_is_no_cycle(tmp_path: Path) -> None:
    rpc = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from qjm.journalnode import node\n"
    assert check(write_tree(tmp_path, {**BASE, "qjm/journalnode/rpc.py": rpc}), CONTRACT) == []


def test_a_cycle_between_packages_is_found(tmp_path: Path) -> None:
    # Both in one layer entry's reach would hide it from the layer check: qjm.cli's two
    # subpackages import each other.
    files = {
        **BASE,
        "qjm/cli/a/__init__.py": "from qjm.cli.b import y\n",
        "qjm/cli/b/__init__.py": "import qjm.cli.a\n",
    }
    problems = check(write_tree(tmp_path, files), CONTRACT)
    assert problems == [
        "import cycle in qjm.cli: qjm.cli.a imports qjm.cli.b; qjm.cli.b imports qjm.cli.a"
    ]


def test_an_allowed_cycle_passes_until_it_is_gone(tmp_path: Path) -> None:
    cyclic = {**BASE, "qjm/journalnode/rpc.py": "from qjm.journalnode import node\n"}
    allowed = Contract(
        CONTRACT.layers, (frozenset({"qjm.journalnode.node", "qjm.journalnode.rpc"}),)
    )
    assert check(write_tree(tmp_path / "a", cyclic), allowed) == []
    stale = check(write_tree(tmp_path / "b", BASE), allowed)
    assert stale == [
        "allowed_cycles lists ['qjm.journalnode.node', 'qjm.journalnode.rpc'], which is no "
        "cycle any more: remove it"
    ]
