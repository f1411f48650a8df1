"""The test port allocator: ports go out in turn, so a long run never fragments its range."""

from __future__ import annotations

import socket

import pytest

import ports


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Confine the allocator to 200 ports of this worker's range, starting at its low end."""
    low = ports.LOW
    monkeypatch.setattr(ports, "LOW", low)
    monkeypatch.setattr(ports, "HIGH", low + 200)
    monkeypatch.setattr(ports, "_cursor", low)
    return low, low + 200


def test_many_single_ports_leave_room_for_a_long_block(narrow: tuple[int, int]) -> None:
    low, high = narrow
    singles = [ports.free_port() for _ in range(120)]
    assert len(set(singles)) == 120
    base = ports.free_port_block(40)
    assert low <= base and base + 40 <= high
    assert not set(range(base, base + 40)) & set(singles)


def test_a_port_in_use_is_stepped_over(narrow: tuple[int, int]) -> None:
    low, _ = narrow
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", low + 5))
        held.listen()
        base = ports.free_port_block(10)
    assert base == low + 6


def test_the_range_wraps_and_hands_out_the_oldest_ports_again(narrow: tuple[int, int]) -> None:
    low, _ = narrow
    assert ports.free_port_block(150) == low
    assert ports.free_port_block(60) == low  # 50 left at the end is too few: wrap
    assert ports.free_port() == low + 60


def test_a_block_wider_than_the_range_is_refused(narrow: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="201 consecutive ports"):
        ports.free_port_block(201)
