"""The import-layer check `make lint` runs: python tests/import_layers.py [ROOT].

The contract is [tool.qjm.import-layers] in pyproject.toml: `layers`, top to bottom, each
a package or module, or several joined by " | " that may not import one another. A module
may import its own layer entry and the layers below it, never one above. Every module of
qjm must fall in a layer. Besides, no cycle between the modules and subpackages of any
package (qjm itself included, so none between packages): an import under
`if TYPE_CHECKING:` never runs and is left out of the cycle check (it names an owner's type
for annotations), though not of the layer check; an import inside a function is counted.
`allowed_cycles` lists cycles still to be removed, each as its set of modules.
"""

from __future__ import annotations

import ast
import itertools
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "qjm"


@dataclass(frozen=True)
class Import:
    """One import statement's target as a module of the tree."""

    source: str  # the importing module
    target: str  # the imported module (or package)
    line: int
    type_checking: bool  # under `if TYPE_CHECKING:`: for annotations only, never run


@dataclass(frozen=True)
class Contract:
    """The layers, top to bottom, and the cycles not yet removed."""

    layers: tuple[tuple[str, ...], ...]
    allowed_cycles: tuple[frozenset[str], ...] = ()

    @classmethod
    def from_pyproject(cls, path: Path) -> Contract:
        """The contract in a pyproject.toml's [tool.qjm.import-layers]."""
        table = tomllib.loads(path.read_text())["tool"]["qjm"]["import-layers"]
        layers = tuple(tuple(p.strip() for p in entry.split("|")) for entry in table["layers"])
        cycles = tuple(frozenset(c) for c in table.get("allowed_cycles", []))
        return cls(layers, cycles)


def module_names(src: Path, package: str = PACKAGE) -> dict[str, Path]:
    """Every module and package below src/package by dotted name, with its file."""
    found: dict[str, Path] = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(
    name: str, source: str, modules: Iterable[str], *, is_package: bool = False
) -> list[Import]:
    """The imports of module `name` (its text `source`) that name modules in `modules`."""
    known = set(modules)
    found: list[Import] = []

    def resolve(base: str, names: Sequence[str]) -> list[str]:
        out = []
        for n in names:
            full = f"{base}.{n}" if base else n
            if full in known:
                out.append(full)
            elif base in known:
                out.append(base)
        return out

    def visit(node: ast.AST, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit_stmt(stmt, True)
                for stmt in child.orelse:
                    visit_stmt(stmt, guarded)
                continue
            visit_stmt(child, guarded)

    def visit_stmt(node: ast.AST, guarded: bool) -> None:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b.c` imports a, a.b and a.b.c; the deepest known one is the target.
                parts = alias.name.split(".")
                for i in range(len(parts), 0, -1):
                    if ".".join(parts[:i]) in known:
                        targets.append(".".join(parts[:i]))
                        break
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = name.split(".") if is_package else name.split(".")[:-1]
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = resolve(base, [a.name for a in node.names])
        for target in dict.fromkeys(targets):
            if target != name:
                found.append(Import(name, target, getattr(node, "lineno", 0), guarded))
        if not isinstance(node, ast.Import | ast.ImportFrom):
            visit(node, guarded)

    visit(ast.parse(source), False)
    return found


def layer_of(module: str, contract: Contract) -> tuple[int, str] | None:
    """(layer index, the entry holding module) for the most specific entry; None if none.

    An entry holds itself and what lies below it; the root package's entry holds only the
    root package (qjm/__init__.py), so every other module needs a layer of its own.
    """
    best: tuple[int, str] | None = None
    for i, entries in enumerate(contract.layers):
        for entry in entries:
            holds = module == entry or (entry != PACKAGE and module.startswith(entry + "."))
            if holds and (best is None or len(entry) > len(best[1])):
                best = (i, entry)
    return best


def layer_problems(
    imports: Iterable[Import], modules: Iterable[str], contract: Contract
) -> list[str]:
    """Modules in no layer, and imports of a higher layer or of an independent sibling."""
    problems = [
        f"{m} is in no layer of [tool.qjm.import-layers]"
        for m in sorted(modules)
        if layer_of(m, contract) is None
    ]
    for imp in imports:
        src, dst = layer_of(imp.source, contract), layer_of(imp.target, contract)
        if src is None or dst is None:
            continue
        if dst[0] < src[0]:
            problems.append(
                f"{imp.source} (line {imp.line}) imports {imp.target}: {dst[1]} is a layer "
                f"above {src[1]}"
            )
        elif dst[0] == src[0] and dst[1] != src[1]:
            problems.append(
                f"{imp.source} (line {imp.line}) imports {imp.target}: {src[1]} and {dst[1]} "
                f"are independent layers"
            )
    return problems


def _child_of(package: str, module: str) -> str | None:
    """The direct child of package that module is or lies in; None if outside it."""
    if not module.startswith(package + "."):
        return None
    return package + "." + module[len(package) + 1 :].split(".")[0]


def _cycle_sets(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def _a_cycle(graph: Mapping[str, set[str]], members: Sequence[str]) -> list[str]:
    """One cycle through members[0] inside the component, for the message."""
    inside = set(members)
    start = members[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for to in sorted(graph.get(node, ())):
                if to == start:
                    return [*paths[node], start]
                if to in inside and to not in paths:
                    paths[to] = [*paths[node], to]
                    nxt.append(to)
        frontier = nxt
    return list(members)


def cycle_problems(
    imports: Iterable[Import], modules: Iterable[str], contract: Contract
) -> list[str]:
    """Import cycles (imports that run) among the children of each package."""
    known = set(modules)
    packages = {m for m in known if any(o.startswith(m + ".") for o in known)}
    edges = [(i.source, i.target) for i in imports if not i.type_checking]
    problems = []
    seen: set[frozenset[str]] = set()
    for package in sorted(packages):
        graph: dict[str, set[str]] = defaultdict(set)
        for a, b in edges:
            ca, cb = _child_of(package, a), _child_of(package, b)
            if ca is not None and cb is not None and ca != cb:
                graph[ca].add(cb)
        for members in _cycle_sets(graph):
            if frozenset(members) in contract.allowed_cycles:
                seen.add(frozenset(members))
                continue
            path = _a_cycle(graph, members)
            hops = []
            for x, y in itertools.pairwise(path):
                a, b = min(
                    (a, b)
                    for a, b in edges
                    if _child_of(package, a) == x and _child_of(package, b) == y
                )
                hops.append(f"{a} imports {b}")
            how = "; ".join(hops)
            problems.append(f"import cycle in {package}: {how}")
    problems += [
        f"allowed_cycles lists {sorted(c)}, which is no cycle any more: remove it"
        for c in contract.allowed_cycles
        if c not in seen
    ]
    return problems


def check(src: Path, contract: Contract) -> list[str]:
    """Every layer and cycle problem of the tree under src (empty: the contract holds)."""
    modules = module_names(src)
    imports: list[Import] = []
    for name, path in modules.items():
        imports += imports_of(
            name, path.read_text(), modules, is_package=path.name == "__init__.py"
        )
    return layer_problems(imports, modules, contract) + cycle_problems(imports, modules, contract)


def main(argv: Sequence[str]) -> int:
    """Check the tree at argv[0] (default: this repository); print each problem."""
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent
    problems = check(root / "src", Contract.from_pyproject(root / "pyproject.toml"))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} import-layer problem(s); the contract is in pyproject.toml")
        return 1
    print("import layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
