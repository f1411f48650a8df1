"""`qjm oev`: the offline edits viewer, like `hdfs oev`.

Input is a binary edits file, or oev XML when its name ends in .xml. Processors: xml (the
element layout of `hdfs oev -p xml`), binary (an edits file, e.g. from edited XML), json
(one object per op) and stats (op counts, like `hdfs oev -p stats`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from qjm.editlog import framing
from qjm.editlog.ops import Op, encode_op, read_ops
from qjm.editlog.ops.jsonl import iter_json_lines
from qjm.editlog.ops.opcodes import NAMES, OP_INVALID
from qjm.editlog.ops.xml import iter_xml, parse_xml
from qjm.errors import QjmError

PROCESSORS = ("xml", "binary", "json", "stats")


class OevError(QjmError):
    """The offline edits viewer could not read its input or write its output."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `qjm oev`."""
    p = subparsers.add_parser(
        "oev",
        help="offline edits viewer (edits <-> XML, JSON lines, stats)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-i", "--inputFile", dest="input", required=True, help="edits file or .xml")
    p.add_argument(
        "-o", "--outputFile", dest="output", default="-", help="output file ('-': stdout)"
    )
    p.add_argument(
        "-p",
        "--processor",
        type=str.lower,
        choices=PROCESSORS,
        default="xml",
        help="output form (default xml)",
    )
    p.set_defaults(func=run)


def load(path: str) -> tuple[int, list[tuple[int, Op]]]:
    """(layout version, [(txid, op)]) from a binary edits file or an oev XML file."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise OevError(f"cannot read {path}: {e.strerror or e}") from None
    if path.lower().endswith(".xml"):
        return parse_xml(data)
    layout = framing.read_header(data)
    return layout, list(read_ops(data))


def stats_lines(layout: int, ops: Iterable[tuple[int, Op]]) -> Iterator[str]:
    """Op counts per opcode in the layout of `hdfs oev -p stats`."""
    counts = Counter(op.OPCODE for _, op in ops)
    yield f"    {'VERSION':<30.30}      : {layout}\n"
    codes = sorted(c for c in NAMES if c not in (OP_INVALID,) and (c < 0x80 or counts[c]))
    for code in [*codes, OP_INVALID]:
        number = -1 if code == OP_INVALID else code
        yield f"    {NAMES[code]:<30.30} ({number:3d}): {counts.get(code, 0)}\n"


def _open_out(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdout.buffer
    try:
        return open(path, "wb")
    except OSError as e:
        raise OevError(f"cannot write {path}: {e.strerror or e}") from None


def run(args: argparse.Namespace) -> int:
    """Convert the input with the chosen processor."""
    layout, ops = load(args.input)
    out = _open_out(args.output)
    try:
        if args.processor == "binary":
            out.write(framing.header(layout))
            for txid, op in ops:
                out.write(encode_op(op, txid))
        else:
            if args.processor == "xml":
                chunks: Iterable[str] = iter_xml(ops, layout)
            elif args.processor == "json":
                chunks = iter_json_lines(ops)
            else:
                chunks = stats_lines(layout, ops)
            for chunk in chunks:
                out.write(chunk.encode("utf-8"))
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise OevError(f"cannot write {args.output}: {e.strerror or e}") from None
    finally:
        if out is not sys.stdout.buffer:
            out.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run `oev` on its own (python -m qjm.cli.oev ...)."""
    parser = argparse.ArgumentParser(prog="qjm")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["oev", *(sys.argv[1:] if argv is None else argv)])
    try:
        return run(args)
    except QjmError as e:
        print(f"qjm oev: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
