"""A DataNode's block keys (HDFS's BlockPoolTokenSecretManager, slave mode; design §S.9):
the keys of every NameNode it reports to, by block pool, to check tokens and to sign its
own for DataNode-to-DataNode copies."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from qjm.security.block_token import (
    AccessMode,
    BlockKey,
    BlockTokenIdentifier,
    ExportedKeys,
    Token,
    check_access,
    issue_token,
    retrieve_password,
    unexpired,
    wall_ms,
)

log = logging.getLogger(__name__)


@dataclass
class _PoolKeys:
    keys: dict[int, BlockKey] = field(default_factory=dict)
    current: BlockKey | None = None
    token_lifetime_ms: int = 0


class BlockPoolKeys:
    """The keys a DataNode holds, per block pool, from every NameNode of the pool.

    Each NameNode's key ids lie in its own range (design §S.9), so keys from two never
    clash; the current key (to sign with) is the one the latest export named.
    """

    def __init__(self, clock_ms: Callable[[], int] = wall_ms) -> None:
        self.clock_ms = clock_ms
        self._pools: dict[str, _PoolKeys] = {}

    def add(self, pool_id: str, exported: ExportedKeys) -> None:
        """Take a NameNode's keys (at registration, or a KeyUpdateCommand); expired ones go."""
        pool = self._pools.setdefault(pool_id, _PoolKeys())
        now = self.clock_ms()
        keys = unexpired(pool.keys.values(), now)
        keys.update(unexpired(exported.all_keys, now))
        keys[exported.current.key_id] = exported.current
        pool.keys = keys
        pool.current = exported.current
        pool.token_lifetime_ms = exported.token_lifetime_ms
        log.info(
            "block pool %s: block keys %s (current %d)",
            pool_id,
            sorted(keys),
            exported.current.key_id,
        )

    def pools(self) -> list[str]:
        """The block pools keys are held for."""
        return sorted(self._pools)

    def key_ids(self, pool_id: str) -> list[int]:
        """The ids of the keys held for a pool."""
        pool = self._pools.get(pool_id)
        return sorted(pool.keys) if pool else []

    def check(
        self, token: Token, pool_id: str, block_id: int, block_name: str, mode: AccessMode
    ) -> BlockTokenIdentifier:
        """The identifier of a token granting mode on the block; InvalidBlockTokenError
        otherwise."""
        pool = self._pools.get(pool_id)
        return check_access(
            token,
            pool.keys if pool else {},
            pool_id=pool_id,
            block_id=block_id,
            block_name=block_name,
            mode=mode,
            now_ms=self.clock_ms(),
        )

    def password(self, identifier: bytes) -> bytes:
        """The password of a block token identifier, recomputed from the key it names
        (design §S.12); InvalidBlockTokenError or ValueError refuses it."""

        def keys_of(pool_id: str) -> dict[int, BlockKey]:
            pool = self._pools.get(pool_id)
            return pool.keys if pool else {}

        return retrieve_password(identifier, keys_of, self.clock_ms())

    def token(self, pool_id: str, block_id: int, modes: Iterable[AccessMode]) -> Token:
        """A token this DataNode signs for a copy to another DataNode (HDFS's DataTransfer),
        with the pool's current key; an empty token when it holds none yet."""
        pool = self._pools.get(pool_id)
        if pool is None or pool.current is None:
            return Token(b"", b"", "", "")
        return issue_token(
            pool.current,
            self.clock_ms() + pool.token_lifetime_ms,
            user_id=None,
            pool_id=pool_id,
            block_id=block_id,
            modes=modes,
        )
