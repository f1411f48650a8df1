"""The Namespace: the inode tree with HDFS's semantics, made of its reads, plans and apply."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from qjm.editlog.ops import (
    AddBlockOp,
    AddOp,
    AllocateBlockIdOp,
    AppendOp,
    CancelDelegationTokenOp,
    ClearNSQuotaOp,
    CloseOp,
    ConcatDeleteOp,
    DeleteOp,
    GetDelegationTokenOp,
    MkdirOp,
    Op,
    ReassignLeaseOp,
    RemoveXAttrOp,
    RenameOldOp,
    RenameOp,
    RenewDelegationTokenOp,
    SetAclOp,
    SetGenstampV1Op,
    SetGenstampV2Op,
    SetNSQuotaOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetQuotaByStorageTypeOp,
    SetQuotaOp,
    SetReplicationOp,
    SetStoragePolicyOp,
    SetXAttrOp,
    SymlinkOp,
    TimesOp,
    TruncateOp,
    UpdateBlocksOp,
    UpdateMasterKeyOp,
)
from qjm.namenode.delegation import DelegationTokens
from qjm.namenode.image.model import QUOTA_UNSET, ROOT_INODE_ID, ROOT_NS_QUOTA
from qjm.namenode.inodes import (
    DIRECTORY,
    NO_SLOT,
    InodeStore,
)
from qjm.namenode.namespace.apply import ApplyMixin
from qjm.namenode.namespace.block_ids import BlockIds
from qjm.namenode.namespace.core import ROOT
from qjm.namenode.namespace.plans import PlansMixin
from qjm.namenode.namespace.reads import ReadsMixin
from qjm.namenode.namespace.recovery import RecoveryMixin
from qjm.namenode.namespace.rules import FsLimits

if TYPE_CHECKING:
    from qjm.namenode.image import FsImage, ImageContents, NameSystemInfo


class Namespace(ReadsMixin, RecoveryMixin, PlansMixin, ApplyMixin):
    """The inode tree with HDFS's semantics."""

    def __init__(
        self,
        *,
        superuser: str,
        supergroup: str = "supergroup",
        permissions_enabled: bool = True,
        root_mtime: int = 0,
    ) -> None:
        """An empty namespace: the root directory only, owned by superuser:supergroup 0755."""
        self.superuser = superuser
        self.supergroup = supergroup
        self.permissions_enabled = permissions_enabled
        self.limits = FsLimits()  # the NameNode sets its configured limits (design §N.4)
        self._st = InodeStore()
        root = self._st.alloc(
            ROOT_INODE_ID, NO_SLOT, DIRECTORY, "", 0o755, superuser, supergroup, root_mtime, 0
        )
        assert root == ROOT
        self._st.quota[ROOT] = [ROOT_NS_QUOTA, QUOTA_UNSET, 1, 0]
        self.last_inode_id = ROOT_INODE_ID
        self.n_files = 0
        self.n_dirs = 1
        self.n_bytes = 0
        self.block_ids = BlockIds()
        self.on_blocks_removed = None
        # delegation tokens and master keys, which the edit log carries (design §S.10)
        self.tokens = DelegationTokens()
        self._appliers: dict[type[Op], Callable[[Any], None]] = {
            MkdirOp: self._apply_mkdir,
            AddOp: self._apply_add,
            CloseOp: self._apply_close,
            DeleteOp: self._apply_delete,
            RenameOldOp: self._apply_rename_old,
            RenameOp: self._apply_rename,
            SetPermissionsOp: self._apply_set_permissions,
            SetOwnerOp: self._apply_set_owner,
            SetReplicationOp: self._apply_set_replication,
            TimesOp: self._apply_times,
            SetQuotaOp: self._apply_set_quota,
            SetNSQuotaOp: self._apply_set_ns_quota,
            ClearNSQuotaOp: self._apply_clear_ns_quota,
            AllocateBlockIdOp: self._apply_allocate_block_id,
            SetGenstampV2Op: self._apply_set_genstamp_v2,
            SetGenstampV1Op: self._apply_set_genstamp_v1,
            # what HDFS writes and our plans do not (an HDFS edit log replays whole)
            AppendOp: self._apply_append,
            AddBlockOp: self._apply_add_block,
            UpdateBlocksOp: self._apply_update_blocks,
            TruncateOp: self._apply_truncate,
            ConcatDeleteOp: self._apply_concat_delete,
            SymlinkOp: self._apply_symlink,
            ReassignLeaseOp: self._apply_reassign_lease,
            SetStoragePolicyOp: self._apply_set_storage_policy,
            SetQuotaByStorageTypeOp: self._apply_set_type_quota,
            SetAclOp: self._apply_set_acl,
            SetXAttrOp: self._apply_set_xattr,
            RemoveXAttrOp: self._apply_remove_xattr,
            UpdateMasterKeyOp: self._apply_token_op,
            GetDelegationTokenOp: self._apply_token_op,
            RenewDelegationTokenOp: self._apply_token_op,
            CancelDelegationTokenOp: self._apply_token_op,
        }

    def _apply_token_op(self, op: Op) -> None:
        """A delegation token or master key op changes the token state (design §S.10)."""
        self.tokens.apply(op)

    def copy(self) -> Namespace:
        """An independent copy of the tree (fast: columns are copied whole).

        For a checkpoint without holding up apply: copy on the applying thread, then
        to_image and write_image the copy on another.
        """
        c = Namespace(
            superuser=self.superuser,
            supergroup=self.supergroup,
            permissions_enabled=self.permissions_enabled,
        )
        c._st = self._st.copy()
        c.limits = self.limits
        c.last_inode_id = self.last_inode_id
        c.block_ids = self.block_ids.copy()
        c.tokens = self.tokens.copy()
        c.n_files, c.n_dirs, c.n_bytes = self.n_files, self.n_dirs, self.n_bytes
        return c

    @classmethod
    def from_store(
        cls,
        store: InodeStore,
        *,
        last_inode_id: int,
        superuser: str,
        supergroup: str = "supergroup",
        permissions_enabled: bool = True,
        ns_info: NameSystemInfo | None = None,
    ) -> Namespace:
        """A namespace over a loaded store (slot 0 its root directory): the image loader's way in.

        The totals and each quota directory's usage are counted from the store; a root
        without a quota gets HDFS's default; the last inode id is at least the largest held;
        the block id and generation stamp counters are ns_info's (design §B.9).
        """
        ns = cls(
            superuser=superuser, supergroup=supergroup, permissions_enabled=permissions_enabled
        )
        ns._st = store
        ns.last_inode_id = max(last_inode_id, max(store.ids))
        if ns_info is not None:
            ns.block_ids = BlockIds.of(ns_info)
        ns.n_dirs = store.flags.count(DIRECTORY)
        ns.n_files = store.count - ns.n_dirs
        ns.n_bytes = sum(store.length)
        if ROOT not in store.quota:
            store.quota[ROOT] = [ROOT_NS_QUOTA, QUOTA_UNSET, 0, 0]
        ns._recount_quotas()
        return ns

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The namespace as image contents for qjm.namenode.image.write_image.

        NS_INFO is ns_info with this namespace's block id and generation stamp counters
        (design §B.9).

        It reads the live tree, so no op may be applied while it runs (call it on the
        thread that applies); what it returns shares nothing mutable with the namespace,
        so write_image can then run on another thread while ops are applied.
        """
        from qjm.namenode.image_bridge import to_image

        return to_image(self, txid, ns_info)

    @classmethod
    def from_image(
        cls,
        image: FsImage,
        *,
        superuser: str,
        supergroup: str = "supergroup",
        permissions_enabled: bool = True,
    ) -> Namespace:
        """A namespace holding a decoded image's tree."""
        from qjm.namenode.image_bridge import store_from_image, tokens_of

        store, last_inode_id = store_from_image(image)
        ns = cls.from_store(
            store,
            last_inode_id=last_inode_id,
            superuser=superuser,
            supergroup=supergroup,
            permissions_enabled=permissions_enabled,
            ns_info=image.ns_info,
        )
        ns.tokens = tokens_of(image.secret_manager)  # design §S.10
        return ns


def load_namespace(
    path: str | os.PathLike[str],
    *,
    superuser: str,
    supergroup: str = "supergroup",
    permissions_enabled: bool = True,
    check_md5: bool = True,
) -> tuple[Namespace, NameSystemInfo]:
    """Start-up: the namespace and NS_INFO of an image file, decoded straight into columns
    (the same result as Namespace.from_image(read_image(path)), about twice as fast)."""
    from qjm.namenode.image_bridge import load_store, tokens_of

    store, last_inode_id, ns_info, secrets = load_store(path, check_md5=check_md5)
    ns = Namespace.from_store(
        store,
        last_inode_id=last_inode_id,
        superuser=superuser,
        supergroup=supergroup,
        permissions_enabled=permissions_enabled,
        ns_info=ns_info,
    )
    ns.tokens = tokens_of(secrets)  # design §S.10: tokens issued before the image live on
    return ns, ns_info
