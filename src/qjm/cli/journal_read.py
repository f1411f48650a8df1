"""`qjm journal read` and `qjm journal tail`: print durable edits as JSON lines or oev XML."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import TextIO
from xml.sax.saxutils import escape

from qjm import runtime
from qjm.cli.common import resolve_uri
from qjm.cli.journal_write import qjournal_settings
from qjm.client.reader import QuorumJournalReader
from qjm.editlog.framing import RawOp
from qjm.editlog.ops import OP_CLASSES, decode_op
from qjm.editlog.ops.jsonl import op_to_dict
from qjm.editlog.ops.xml import record_xml, xml_head
from qjm.errors import EditLogError


def add_read_commands(
    jsub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_uri_args: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Register `journal read` and `journal tail` under `qjm journal`."""
    rd = jsub.add_parser("read", help="print the journal's durable edits")
    add_uri_args(rd)
    rd.add_argument("--from", dest="from_txid", type=int, default=1, help="first txid (1)")
    rd.add_argument("--to", dest="to_txid", type=int, help="last txid (default: the end)")
    rd.add_argument("--format", choices=["jsonl", "xml"], default="jsonl")
    rd.add_argument(
        "--finalized-only", action="store_true", help="skip the open segment's committed edits"
    )
    rd.set_defaults(func=run_read)

    tl = jsub.add_parser("tail", help="follow committed edits as they arrive")
    add_uri_args(tl)
    tl.add_argument("--from", dest="from_txid", type=int, help="first txid (default: the end)")
    tl.add_argument("--format", choices=["jsonl", "xml"], default="jsonl")
    tl.add_argument("--count", type=int, help="stop after this many ops")
    tl.set_defaults(func=run_tail)


def raw_dict(op: RawOp) -> dict[str, object]:
    """An op the HDFS codec does not know (or cannot decode), with its body in hex."""
    return {"txid": op.txid, "opcode": op.opcode, "body_hex": op.body.hex()}


def op_json(op: RawOp) -> str:
    """One JSON line: decoded when the HDFS codec knows the opcode, raw otherwise."""
    if op.opcode in OP_CLASSES:
        try:
            d = op_to_dict(op.txid, decode_op(op))
            d["opcode_byte"] = op.opcode
            return json.dumps(d, ensure_ascii=False, separators=(",", ":"))
        except EditLogError as e:
            d2 = raw_dict(op)
            d2["decode_error"] = str(e)
            return json.dumps(d2, separators=(",", ":"))
    return json.dumps(raw_dict(op), separators=(",", ":"))


def op_xml(op: RawOp) -> str:
    """One <RECORD> element in the layout of `hdfs oev -p xml`; raw bytes when unknown."""
    try:
        return record_xml(op.txid, decode_op(op)).rstrip("\n")
    except EditLogError as e:
        return (
            f"  <RECORD>\n    <OPCODE>UNKNOWN_{op.opcode}</OPCODE>\n    <DATA>\n"
            f"      <TXID>{op.txid}</TXID>\n      <BODY_HEX>{op.body.hex()}</BODY_HEX>\n"
            f"      <!-- {escape(str(e)).replace('--', '- -')} -->\n    </DATA>\n  </RECORD>"
        )


class Printer:
    """Writes ops to a stream in one format, flushing after each batch."""

    def __init__(self, fmt: str, out: TextIO) -> None:
        self.fmt = fmt
        self.out = out
        self.count = 0
        if fmt == "xml":
            out.write(xml_head())

    def batch(self, ops: Iterable[RawOp]) -> None:
        """Print ops and flush."""
        for op in ops:
            self.out.write((op_json(op) if self.fmt == "jsonl" else op_xml(op)) + "\n")
            self.count += 1
        self.out.flush()

    def close(self) -> None:
        """Finish the document."""
        if self.fmt == "xml":
            self.out.write("</EDITS>\n")
        self.out.flush()


def run_read(args: argparse.Namespace) -> int:
    """Print every durable op from --from on."""
    uri = resolve_uri(args)
    printer = Printer(args.format, sys.stdout)

    async def go() -> None:
        async with QuorumJournalReader(uri, qjournal_settings(args)) as reader:
            batch: list[RawOp] = []
            async for op in reader.read(args.from_txid, not args.finalized_only, args.to_txid):
                batch.append(op)
                if len(batch) >= 1000:
                    printer.batch(batch)
                    batch = []
            printer.batch(batch)

    runtime.run(go())
    printer.close()
    print(f"read {printer.count} ops of journal {uri.jid}", file=sys.stderr)
    return 0


def run_tail(args: argparse.Namespace) -> int:
    """Follow committed ops, printing each batch as soon as it is durable."""
    uri = resolve_uri(args)
    printer = Printer(args.format, sys.stdout)

    async def go() -> None:
        async with QuorumJournalReader(uri, qjournal_settings(args)) as reader:
            start = args.from_txid
            if start is None:
                start = (await reader.manifest(1, True)).last_txid() + 1
            async for ops in reader.tail(start):
                if args.count is not None:
                    ops = ops[: args.count - printer.count]
                printer.batch(ops)
                if args.count is not None and printer.count >= args.count:
                    return

    try:
        runtime.run(go())
    finally:
        printer.close()
    return 0
