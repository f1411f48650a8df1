"""Quotas: the cached usage of quota directories, charged and checked up the tree."""

from __future__ import annotations

from qjm.namenode.errors import (
    DSQuotaExceededError,
    NSQuotaExceededError,
)
from qjm.namenode.inodes import (
    DIRECTORY,
    NO_SLOT,
)
from qjm.namenode.namespace.core import ROOT, NamespaceCore

QUOTA_DONT_SET = (1 << 63) - 1  # HdfsConstants.QUOTA_DONT_SET
_PREFIXES = "KMGTPE"  # StringUtils.TraditionalBinaryPrefix symbols, 2^10 apart


def long2string(n: int, unit: str = "B") -> str:
    """n with a binary prefix and two decimals, as Hadoop's TraditionalBinaryPrefix.long2String."""
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < 1024:
        return f"{sign}{n} {unit}"
    i = min((n.bit_length() - 1) // 10, len(_PREFIXES))
    shift = 10 * i
    if n & ((1 << shift) - 1) == 0:
        text = str(n >> shift)
    else:
        text = f"{n / (1 << shift):.2f}"
        if text.startswith("1024") and i < len(_PREFIXES):
            i += 1
            shift += 10
            text = f"{n / (1 << shift):.2f}"
    return f"{sign}{text} {_PREFIXES[i - 1]}{unit}"


class QuotaMixin(NamespaceCore):
    """Subtree usage and the name and space quotas above a slot."""

    def subtree_usage(self, s: int) -> tuple[int, int, int, int, int]:
        """(namespace count, space consumed, files, directories, bytes) of a subtree."""
        st = self._st
        ns = ds = files = dirs = nbytes = 0
        for x in st.subtree(s):
            ns += 1
            if st.flags[x] & 3 == DIRECTORY:
                dirs += 1
            else:
                files += 1
                n = st.length[x]
                nbytes += n
                ds += n * st.replication[x]
        return ns, ds, files, dirs, nbytes

    def _charge(self, s: int, dns: int, dds: int) -> None:
        """Add to the cached usage of every quota directory from s up to the root."""
        q = self._st.quota
        if len(q) == 1:
            root = q.get(ROOT)
            if root is not None:
                root[2] += dns
                root[3] += dds
                return
        parent = self._st.parent
        while s != NO_SLOT:
            e = q.get(s)
            if e is not None:
                e[2] += dns
                e[3] += dds
            s = parent[s]

    def _ancestors_of(self, s: int) -> set[int]:
        out = set()
        parent = self._st.parent
        while s != NO_SLOT:
            out.add(s)
            s = parent[s]
        return out

    def _check_quota(self, s: int, dns: int, dds: int, stop: set[int] | None = None) -> None:
        """Refuse adding dns names and dds bytes under directory s (stop: shared ancestors)."""
        st = self._st
        if dns <= 0 and dds <= 0:
            return
        while s != NO_SLOT:
            if stop is not None and s in stop:
                return
            e = st.quota.get(s)
            if e is not None:
                if dns > 0 and e[0] >= 0 and e[2] + dns > e[0]:
                    raise NSQuotaExceededError(
                        f"The NameSpace quota (directories and files) of directory "
                        f"{st.path_of(s)} is exceeded: quota={e[0]} file count={e[2] + dns}"
                    )
                if dds > 0 and e[1] >= 0 and e[3] + dds > e[1]:
                    used = e[3] + dds
                    raise DSQuotaExceededError(
                        f"The DiskSpace quota of {st.path_of(s)} is exceeded: quota = {e[1]} B = "
                        f"{long2string(e[1])} but diskspace consumed = {used} B = "
                        f"{long2string(used)}"
                    )
            s = st.parent[s]

    def _recount_quotas(self) -> None:
        """Count every quota directory's cached usage from the tree (after a load)."""
        st = self._st
        for s, q in st.quota.items():
            if s == ROOT:  # the whole tree: every inode, every file's bytes
                q[2] = st.count
                q[3] = sum(st.length[x] * st.replication[x] for x in st.blocks)
            else:
                q[2], q[3] = self.subtree_usage(s)[:2]
