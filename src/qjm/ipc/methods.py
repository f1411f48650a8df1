"""An RPC protocol's methods: each one's wire name and message types."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.message import Message


@dataclass(frozen=True)
class MethodSpec:
    """One RPC: its wire name and its request and response message types."""

    name: str
    request: type[Message]
    response: type[Message]


def method_table(*specs: MethodSpec) -> dict[str, MethodSpec]:
    """A protocol's methods by wire name."""
    return {s.name: s for s in specs}
