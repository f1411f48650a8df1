"""The NameNode's block token secret manager (HDFS's BlockTokenSecretManager, master mode;
design §S.9): block keys that roll, exported to DataNodes, and the tokens it signs."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable

from qjm.config import ClusterConfig
from qjm.security.block_token import (
    AccessMode,
    BlockKey,
    ExportedKeys,
    Token,
    issue_token,
    unexpired,
    wall_ms,
)

INT_MAX = (1 << 31) - 1
KEY_BYTES = 64  # HDFS's HMAC-SHA1 key generator makes 64-byte keys


def key_id_range(nn_index: int, num_nns: int) -> tuple[int, int]:
    """The key ids [start, start + size) of the nn_index'th of num_nns NameNodes: disjoint,
    so two NameNodes' keys never clash on a DataNode (HDFS 3's nnRangeStart)."""
    if not 0 <= nn_index < num_nns:
        raise ValueError(f"NameNode index {nn_index} outside 0..{num_nns - 1}")
    size = INT_MAX // num_nns
    return size * nn_index, size


def next_serial(serial: int, nn_index: int, num_nns: int) -> int:
    """The key id after serial, inside this NameNode's range (HDFS's setSerialNo)."""
    start, size = key_id_range(nn_index, num_nns)
    return start + (serial + 1 - start) % size


class BlockTokenSecretManager:
    """Makes and rolls block keys and signs block tokens with the current one.

    As HDFS: a current key and a next key, made at start; each roll (every
    key_update_interval_ms) retires the current key (kept until the tokens it signed
    expire), makes the next one current and makes a new next one. Each key carries the
    expiry a DataNode drops it at, so a NameNode that stops rolling leaves none for ever.
    """

    def __init__(
        self,
        *,
        nn_index: int,
        num_nns: int,
        key_update_interval_ms: int,
        token_lifetime_ms: int,
        clock_ms: Callable[[], int] = wall_ms,
        random_bytes: Callable[[int], bytes] = secrets.token_bytes,
    ) -> None:
        self.nn_index = nn_index
        self.num_nns = num_nns
        self.key_update_interval_ms = key_update_interval_ms
        self.token_lifetime_ms = token_lifetime_ms
        self.clock_ms = clock_ms
        self._random = random_bytes
        start, size = key_id_range(nn_index, num_nns)
        self._serial = start + secrets.randbelow(size)
        now = clock_ms()
        self.current = self._new_key(now + 2 * key_update_interval_ms + token_lifetime_ms)
        self.next = self._new_key(now + 3 * key_update_interval_ms + token_lifetime_ms)
        self.keys = {k.key_id: k for k in (self.current, self.next)}
        self.last_roll_ms = now
        self.generation = 0  # counts rolls: a DataNode behind it gets a KeyUpdateCommand

    def _new_key(self, expiry_ms: int) -> BlockKey:
        self._serial = next_serial(self._serial, self.nn_index, self.num_nns)
        return BlockKey(self._serial, expiry_ms, self._random(KEY_BYTES))

    def roll_if_due(self) -> bool:
        """Roll the keys when an update interval has passed since the last roll."""
        now = self.clock_ms()
        if now - self.last_roll_ms < self.key_update_interval_ms:
            return False
        self.roll(now)
        return True

    def roll(self, now: int) -> None:
        """Retire the current key, promote the next, make a new next (HDFS's updateKeys)."""
        interval, lifetime = self.key_update_interval_ms, self.token_lifetime_ms
        keys = unexpired(self.keys.values(), now)
        old = self.current
        keys[old.key_id] = BlockKey(old.key_id, now + interval + lifetime, old.secret)
        self.current = BlockKey(self.next.key_id, now + 2 * interval + lifetime, self.next.secret)
        keys[self.current.key_id] = self.current
        self.next = self._new_key(now + 3 * interval + lifetime)
        keys[self.next.key_id] = self.next
        self.keys = keys
        self.last_roll_ms = now
        self.generation += 1

    def export(self) -> ExportedKeys:
        """The keys for DataNodes (ExportedBlockKeys)."""
        return ExportedKeys(
            enabled=True,
            key_update_interval_ms=self.key_update_interval_ms,
            token_lifetime_ms=self.token_lifetime_ms,
            current=self.current,
            all_keys=tuple(self.keys.values()),
        )

    def token(
        self, user: str | None, pool_id: str, block_id: int, modes: Iterable[AccessMode]
    ) -> Token:
        """A token granting modes on the block to user, signed with the current key."""
        return issue_token(
            self.current,
            self.clock_ms() + self.token_lifetime_ms,
            user_id=user,
            pool_id=pool_id,
            block_id=block_id,
            modes=modes,
        )


def block_token_manager(cfg: ClusterConfig, name: str) -> BlockTokenSecretManager | None:
    """The secret manager of NameNode name, or None when block tokens are off; its index is
    its place among the cluster's NameNodes (HDFS's, in dfs.ha.namenodes)."""
    sec = cfg.security
    if not sec.block_tokens:
        return None
    names = list(cfg.namenodes)
    return BlockTokenSecretManager(
        nn_index=names.index(name),
        num_nns=len(names),
        key_update_interval_ms=sec.block_key_update_interval_min * 60_000,
        token_lifetime_ms=sec.block_token_lifetime_min * 60_000,
    )
