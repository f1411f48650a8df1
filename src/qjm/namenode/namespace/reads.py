"""Reads of the tree: stat, listing, content summary, totals and dumps."""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any

from qjm.namenode.errors import PathNotFoundError
from qjm.namenode.image.model import QUOTA_UNSET
from qjm.namenode.namespace.core import ROOT
from qjm.namenode.namespace.quota import QuotaMixin
from qjm.namenode.permissions import READ_EXECUTE
from qjm.namenode.types import Caller, ContentSummary, FileStatus


class ReadsMixin(QuotaMixin):
    """The namespace's read calls; they change nothing."""

    def stat(self, path: str, caller: Caller) -> FileStatus | None:
        """The status of a path (its own name; "" for the root), or None if it does not exist."""
        r = self._resolve(path)
        self._traverse(self._pc(caller), r)
        if not r.found:
            return None
        return self._status(r.last)

    def listing(
        self, path: str, caller: Caller, start_after: str = "", limit: int = 1000
    ) -> tuple[list[FileStatus], int] | None:
        """A directory's entries after start_after, sorted by name, and how many remain.

        None if the path does not exist; a file lists itself (with the empty name, as
        HDFS answers it). Needs READ_EXECUTE on a directory.
        """
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            return None
        s = r.last
        st = self._st
        if not st.is_dir(s):
            return [self._status(s, "")], 0
        pc.check(s, READ_EXECUTE)
        k = st.kids[s]
        if not k:
            return [], 0
        names = st.names_sorted(s)
        i = bisect.bisect_right(names, start_after) if start_after else 0
        take = names[i : i + max(limit, 0)]
        return [self._status(k[n]) for n in take], len(names) - i - len(take)

    def content_summary(self, path: str, caller: Caller) -> ContentSummary:
        """Totals under a path (READ_EXECUTE needed on every directory under it)."""
        r = self._resolve(path)
        pc = self._pc(caller)
        self._traverse(pc, r)
        if not r.found:
            raise PathNotFoundError(f"File does not exist: {path}")
        s = r.last
        q = self._st.quota.get(s)
        if s == ROOT and pc.super and q is not None:  # the whole tree: kept counts
            return ContentSummary(
                length=self.n_bytes,
                file_count=self.n_files,
                directory_count=self.n_dirs,
                ns_quota=q[0],
                space_consumed=q[3],
                space_quota=q[1],
            )
        pc.check_subtree(s, READ_EXECUTE, False)
        _, ds, files, dirs, nbytes = self.subtree_usage(s)
        return ContentSummary(
            length=nbytes,
            file_count=files,
            directory_count=dirs,
            ns_quota=q[0] if q else QUOTA_UNSET,
            space_consumed=ds,
            space_quota=q[1] if q else QUOTA_UNSET,
        )

    def totals(self) -> tuple[int, int, int]:
        """(files, directories, bytes) in the whole tree."""
        return self.n_files, self.n_dirs, self.n_bytes

    def dump(self) -> list[tuple[Any, ...]]:
        """Every inode as a tuple (path first), sorted by path: for comparing two namespaces."""
        st = self._st
        out = []
        for s in st.subtree(ROOT):
            q = st.quota.get(s)
            out.append(
                (
                    st.path_of(s),
                    st.ids[s],
                    st.flags[s],
                    st.mode[s],
                    st.owner_name(s),
                    st.group_name(s),
                    st.mtime[s],
                    st.atime[s],
                    st.replication[s],
                    st.block_size[s],
                    st.length[s],
                    st.blocks.get(s, ()),
                    None if q is None else tuple(q),
                    st.lease.get(s),
                    tuple(sorted(st.extra.get(s, {}).items())),
                )
            )
        out.sort(key=lambda t: t[0])
        return out

    def iter_paths(self) -> Iterator[tuple[str, FileStatus]]:
        """(path, status) of every inode, parents before children."""
        st = self._st
        for s in st.subtree(ROOT):
            yield st.path_of(s), self._status(s)
