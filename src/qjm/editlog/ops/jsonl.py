"""A JSON-lines form of ops: one object per op with its txid, opcode name and fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any

from qjm.editlog.ops.base import Op
from qjm.editlog.ops.xml import client_id_text


def _plain(v: Any) -> Any:
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    return v


def op_to_dict(txid: int, op: Op) -> dict[str, Any]:
    """A JSON-ready dict: txid, opcode and every field (bytes as hex, client ids as UUIDs)."""
    out: dict[str, Any] = {"txid": txid, "opcode": op.opcode_name}
    for f in dataclasses.fields(op):  # type: ignore[arg-type]
        v = getattr(op, f.name)
        out[f.name] = client_id_text(v) if f.name == "rpc_client_id" else _plain(v)
    return out


def iter_json_lines(ops: Iterable[tuple[int, Op]]) -> Iterator[str]:
    """One compact JSON object per op, each ending in a newline."""
    for txid, op in ops:
        yield json.dumps(op_to_dict(txid, op), ensure_ascii=False, separators=(",", ":")) + "\n"
