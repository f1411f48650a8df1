from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StorageTypeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISK: _ClassVar[StorageTypeProto]
    SSD: _ClassVar[StorageTypeProto]
    ARCHIVE: _ClassVar[StorageTypeProto]
    RAM_DISK: _ClassVar[StorageTypeProto]
    PROVIDED: _ClassVar[StorageTypeProto]

class BlockTypeProto(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTIGUOUS: _ClassVar[BlockTypeProto]
    STRIPED: _ClassVar[BlockTypeProto]

class ErasureCodingPolicyState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISABLED: _ClassVar[ErasureCodingPolicyState]
    ENABLED: _ClassVar[ErasureCodingPolicyState]
    REMOVED: _ClassVar[ErasureCodingPolicyState]
DISK: StorageTypeProto
SSD: StorageTypeProto
ARCHIVE: StorageTypeProto
RAM_DISK: StorageTypeProto
PROVIDED: StorageTypeProto
CONTIGUOUS: BlockTypeProto
STRIPED: BlockTypeProto
DISABLED: ErasureCodingPolicyState
ENABLED: ErasureCodingPolicyState
REMOVED: ErasureCodingPolicyState

class FileSummary(_message.Message):
    __slots__ = ("ondiskVersion", "layoutVersion", "codec", "sections")
    class Section(_message.Message):
        __slots__ = ("name", "length", "offset")
        NAME_FIELD_NUMBER: _ClassVar[int]
        LENGTH_FIELD_NUMBER: _ClassVar[int]
        OFFSET_FIELD_NUMBER: _ClassVar[int]
        name: str
        length: int
        offset: int
        def __init__(self, name: _Optional[str] = ..., length: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...
    ONDISKVERSION_FIELD_NUMBER: _ClassVar[int]
    LAYOUTVERSION_FIELD_NUMBER: _ClassVar[int]
    CODEC_FIELD_NUMBER: _ClassVar[int]
    SECTIONS_FIELD_NUMBER: _ClassVar[int]
    ondiskVersion: int
    layoutVersion: int
    codec: str
    sections: _containers.RepeatedCompositeFieldContainer[FileSummary.Section]
    def __init__(self, ondiskVersion: _Optional[int] = ..., layoutVersion: _Optional[int] = ..., codec: _Optional[str] = ..., sections: _Optional[_Iterable[_Union[FileSummary.Section, _Mapping]]] = ...) -> None: ...

class NameSystemSection(_message.Message):
    __slots__ = ("namespaceId", "genstampV1", "genstampV2", "genstampV1Limit", "lastAllocatedBlockId", "transactionId", "rollingUpgradeStartTime", "lastAllocatedStripedBlockId")
    NAMESPACEID_FIELD_NUMBER: _ClassVar[int]
    GENSTAMPV1_FIELD_NUMBER: _ClassVar[int]
    GENSTAMPV2_FIELD_NUMBER: _ClassVar[int]
    GENSTAMPV1LIMIT_FIELD_NUMBER: _ClassVar[int]
    LASTALLOCATEDBLOCKID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONID_FIELD_NUMBER: _ClassVar[int]
    ROLLINGUPGRADESTARTTIME_FIELD_NUMBER: _ClassVar[int]
    LASTALLOCATEDSTRIPEDBLOCKID_FIELD_NUMBER: _ClassVar[int]
    namespaceId: int
    genstampV1: int
    genstampV2: int
    genstampV1Limit: int
    lastAllocatedBlockId: int
    transactionId: int
    rollingUpgradeStartTime: int
    lastAllocatedStripedBlockId: int
    def __init__(self, namespaceId: _Optional[int] = ..., genstampV1: _Optional[int] = ..., genstampV2: _Optional[int] = ..., genstampV1Limit: _Optional[int] = ..., lastAllocatedBlockId: _Optional[int] = ..., transactionId: _Optional[int] = ..., rollingUpgradeStartTime: _Optional[int] = ..., lastAllocatedStripedBlockId: _Optional[int] = ...) -> None: ...

class BlockProto(_message.Message):
    __slots__ = ("blockId", "genStamp", "numBytes")
    BLOCKID_FIELD_NUMBER: _ClassVar[int]
    GENSTAMP_FIELD_NUMBER: _ClassVar[int]
    NUMBYTES_FIELD_NUMBER: _ClassVar[int]
    blockId: int
    genStamp: int
    numBytes: int
    def __init__(self, blockId: _Optional[int] = ..., genStamp: _Optional[int] = ..., numBytes: _Optional[int] = ...) -> None: ...

class INodeSection(_message.Message):
    __slots__ = ("lastInodeId", "numInodes")
    class FileUnderConstructionFeature(_message.Message):
        __slots__ = ("clientName", "clientMachine")
        CLIENTNAME_FIELD_NUMBER: _ClassVar[int]
        CLIENTMACHINE_FIELD_NUMBER: _ClassVar[int]
        clientName: str
        clientMachine: str
        def __init__(self, clientName: _Optional[str] = ..., clientMachine: _Optional[str] = ...) -> None: ...
    class AclFeatureProto(_message.Message):
        __slots__ = ("entries",)
        ENTRIES_FIELD_NUMBER: _ClassVar[int]
        entries: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, entries: _Optional[_Iterable[int]] = ...) -> None: ...
    class XAttrCompactProto(_message.Message):
        __slots__ = ("name", "value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        name: int
        value: bytes
        def __init__(self, name: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...
    class XAttrFeatureProto(_message.Message):
        __slots__ = ("xAttrs",)
        XATTRS_FIELD_NUMBER: _ClassVar[int]
        xAttrs: _containers.RepeatedCompositeFieldContainer[INodeSection.XAttrCompactProto]
        def __init__(self, xAttrs: _Optional[_Iterable[_Union[INodeSection.XAttrCompactProto, _Mapping]]] = ...) -> None: ...
    class INodeFile(_message.Message):
        __slots__ = ("replication", "modificationTime", "accessTime", "preferredBlockSize", "permission", "blocks", "fileUC", "acl", "xAttrs", "storagePolicyID", "blockType", "erasureCodingPolicyID")
        REPLICATION_FIELD_NUMBER: _ClassVar[int]
        MODIFICATIONTIME_FIELD_NUMBER: _ClassVar[int]
        ACCESSTIME_FIELD_NUMBER: _ClassVar[int]
        PREFERREDBLOCKSIZE_FIELD_NUMBER: _ClassVar[int]
        PERMISSION_FIELD_NUMBER: _ClassVar[int]
        BLOCKS_FIELD_NUMBER: _ClassVar[int]
        FILEUC_FIELD_NUMBER: _ClassVar[int]
        ACL_FIELD_NUMBER: _ClassVar[int]
        XATTRS_FIELD_NUMBER: _ClassVar[int]
        STORAGEPOLICYID_FIELD_NUMBER: _ClassVar[int]
        BLOCKTYPE_FIELD_NUMBER: _ClassVar[int]
        ERASURECODINGPOLICYID_FIELD_NUMBER: _ClassVar[int]
        replication: int
        modificationTime: int
        accessTime: int
        preferredBlockSize: int
        permission: int
        blocks: _containers.RepeatedCompositeFieldContainer[BlockProto]
        fileUC: INodeSection.FileUnderConstructionFeature
        acl: INodeSection.AclFeatureProto
        xAttrs: INodeSection.XAttrFeatureProto
        storagePolicyID: int
        blockType: BlockTypeProto
        erasureCodingPolicyID: int
        def __init__(self, replication: _Optional[int] = ..., modificationTime: _Optional[int] = ..., accessTime: _Optional[int] = ..., preferredBlockSize: _Optional[int] = ..., permission: _Optional[int] = ..., blocks: _Optional[_Iterable[_Union[BlockProto, _Mapping]]] = ..., fileUC: _Optional[_Union[INodeSection.FileUnderConstructionFeature, _Mapping]] = ..., acl: _Optional[_Union[INodeSection.AclFeatureProto, _Mapping]] = ..., xAttrs: _Optional[_Union[INodeSection.XAttrFeatureProto, _Mapping]] = ..., storagePolicyID: _Optional[int] = ..., blockType: _Optional[_Union[BlockTypeProto, str]] = ..., erasureCodingPolicyID: _Optional[int] = ...) -> None: ...
    class QuotaByStorageTypeEntryProto(_message.Message):
        __slots__ = ("storageType", "quota")
        STORAGETYPE_FIELD_NUMBER: _ClassVar[int]
        QUOTA_FIELD_NUMBER: _ClassVar[int]
        storageType: StorageTypeProto
        quota: int
        def __init__(self, storageType: _Optional[_Union[StorageTypeProto, str]] = ..., quota: _Optional[int] = ...) -> None: ...
    class QuotaByStorageTypeFeatureProto(_message.Message):
        __slots__ = ("quotas",)
        QUOTAS_FIELD_NUMBER: _ClassVar[int]
        quotas: _containers.RepeatedCompositeFieldContainer[INodeSection.QuotaByStorageTypeEntryProto]
        def __init__(self, quotas: _Optional[_Iterable[_Union[INodeSection.QuotaByStorageTypeEntryProto, _Mapping]]] = ...) -> None: ...
    class INodeDirectory(_message.Message):
        __slots__ = ("modificationTime", "nsQuota", "dsQuota", "permission", "acl", "xAttrs", "typeQuotas")
        MODIFICATIONTIME_FIELD_NUMBER: _ClassVar[int]
        NSQUOTA_FIELD_NUMBER: _ClassVar[int]
        DSQUOTA_FIELD_NUMBER: _ClassVar[int]
        PERMISSION_FIELD_NUMBER: _ClassVar[int]
        ACL_FIELD_NUMBER: _ClassVar[int]
        XATTRS_FIELD_NUMBER: _ClassVar[int]
        TYPEQUOTAS_FIELD_NUMBER: _ClassVar[int]
        modificationTime: int
        nsQuota: int
        dsQuota: int
        permission: int
        acl: INodeSection.AclFeatureProto
        xAttrs: INodeSection.XAttrFeatureProto
        typeQuotas: INodeSection.QuotaByStorageTypeFeatureProto
        def __init__(self, modificationTime: _Optional[int] = ..., nsQuota: _Optional[int] = ..., dsQuota: _Optional[int] = ..., permission: _Optional[int] = ..., acl: _Optional[_Union[INodeSection.AclFeatureProto, _Mapping]] = ..., xAttrs: _Optional[_Union[INodeSection.XAttrFeatureProto, _Mapping]] = ..., typeQuotas: _Optional[_Union[INodeSection.QuotaByStorageTypeFeatureProto, _Mapping]] = ...) -> None: ...
    class INodeSymlink(_message.Message):
        __slots__ = ("permission", "target", "modificationTime", "accessTime")
        PERMISSION_FIELD_NUMBER: _ClassVar[int]
        TARGET_FIELD_NUMBER: _ClassVar[int]
        MODIFICATIONTIME_FIELD_NUMBER: _ClassVar[int]
        ACCESSTIME_FIELD_NUMBER: _ClassVar[int]
        permission: int
        target: bytes
        modificationTime: int
        accessTime: int
        def __init__(self, permission: _Optional[int] = ..., target: _Optional[bytes] = ..., modificationTime: _Optional[int] = ..., accessTime: _Optional[int] = ...) -> None: ...
    class INode(_message.Message):
        __slots__ = ("type", "id", "name", "file", "directory", "symlink")
        class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            FILE: _ClassVar[INodeSection.INode.Type]
            DIRECTORY: _ClassVar[INodeSection.INode.Type]
            SYMLINK: _ClassVar[INodeSection.INode.Type]
        FILE: INodeSection.INode.Type
        DIRECTORY: INodeSection.INode.Type
        SYMLINK: INodeSection.INode.Type
        TYPE_FIELD_NUMBER: _ClassVar[int]
        ID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        FILE_FIELD_NUMBER: _ClassVar[int]
        DIRECTORY_FIELD_NUMBER: _ClassVar[int]
        SYMLINK_FIELD_NUMBER: _ClassVar[int]
        type: INodeSection.INode.Type
        id: int
        name: bytes
        file: INodeSection.INodeFile
        directory: INodeSection.INodeDirectory
        symlink: INodeSection.INodeSymlink
        def __init__(self, type: _Optional[_Union[INodeSection.INode.Type, str]] = ..., id: _Optional[int] = ..., name: _Optional[bytes] = ..., file: _Optional[_Union[INodeSection.INodeFile, _Mapping]] = ..., directory: _Optional[_Union[INodeSection.INodeDirectory, _Mapping]] = ..., symlink: _Optional[_Union[INodeSection.INodeSymlink, _Mapping]] = ...) -> None: ...
    LASTINODEID_FIELD_NUMBER: _ClassVar[int]
    NUMINODES_FIELD_NUMBER: _ClassVar[int]
    lastInodeId: int
    numInodes: int
    def __init__(self, lastInodeId: _Optional[int] = ..., numInodes: _Optional[int] = ...) -> None: ...

class FilesUnderConstructionSection(_message.Message):
    __slots__ = ()
    class FileUnderConstructionEntry(_message.Message):
        __slots__ = ("inodeId", "fullPath")
        INODEID_FIELD_NUMBER: _ClassVar[int]
        FULLPATH_FIELD_NUMBER: _ClassVar[int]
        inodeId: int
        fullPath: str
        def __init__(self, inodeId: _Optional[int] = ..., fullPath: _Optional[str] = ...) -> None: ...
    def __init__(self) -> None: ...

class INodeDirectorySection(_message.Message):
    __slots__ = ()
    class DirEntry(_message.Message):
        __slots__ = ("parent", "children", "refChildren")
        PARENT_FIELD_NUMBER: _ClassVar[int]
        CHILDREN_FIELD_NUMBER: _ClassVar[int]
        REFCHILDREN_FIELD_NUMBER: _ClassVar[int]
        parent: int
        children: _containers.RepeatedScalarFieldContainer[int]
        refChildren: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, parent: _Optional[int] = ..., children: _Optional[_Iterable[int]] = ..., refChildren: _Optional[_Iterable[int]] = ...) -> None: ...
    def __init__(self) -> None: ...

class INodeReferenceSection(_message.Message):
    __slots__ = ()
    class INodeReference(_message.Message):
        __slots__ = ("referredId", "name", "dstSnapshotId", "lastSnapshotId")
        REFERREDID_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        DSTSNAPSHOTID_FIELD_NUMBER: _ClassVar[int]
        LASTSNAPSHOTID_FIELD_NUMBER: _ClassVar[int]
        referredId: int
        name: bytes
        dstSnapshotId: int
        lastSnapshotId: int
        def __init__(self, referredId: _Optional[int] = ..., name: _Optional[bytes] = ..., dstSnapshotId: _Optional[int] = ..., lastSnapshotId: _Optional[int] = ...) -> None: ...
    def __init__(self) -> None: ...

class SnapshotSection(_message.Message):
    __slots__ = ("snapshotCounter", "snapshottableDir", "numSnapshots")
    class Snapshot(_message.Message):
        __slots__ = ("snapshotId", "root")
        SNAPSHOTID_FIELD_NUMBER: _ClassVar[int]
        ROOT_FIELD_NUMBER: _ClassVar[int]
        snapshotId: int
        root: INodeSection.INode
        def __init__(self, snapshotId: _Optional[int] = ..., root: _Optional[_Union[INodeSection.INode, _Mapping]] = ...) -> None: ...
    SNAPSHOTCOUNTER_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTTABLEDIR_FIELD_NUMBER: _ClassVar[int]
    NUMSNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    snapshotCounter: int
    snapshottableDir: _containers.RepeatedScalarFieldContainer[int]
    numSnapshots: int
    def __init__(self, snapshotCounter: _Optional[int] = ..., snapshottableDir: _Optional[_Iterable[int]] = ..., numSnapshots: _Optional[int] = ...) -> None: ...

class SnapshotDiffSection(_message.Message):
    __slots__ = ()
    class CreatedListEntry(_message.Message):
        __slots__ = ("name",)
        NAME_FIELD_NUMBER: _ClassVar[int]
        name: bytes
        def __init__(self, name: _Optional[bytes] = ...) -> None: ...
    class DirectoryDiff(_message.Message):
        __slots__ = ("snapshotId", "childrenSize", "isSnapshotRoot", "name", "snapshotCopy", "createdListSize", "deletedINode", "deletedINodeRef")
        SNAPSHOTID_FIELD_NUMBER: _ClassVar[int]
        CHILDRENSIZE_FIELD_NUMBER: _ClassVar[int]
        ISSNAPSHOTROOT_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        SNAPSHOTCOPY_FIELD_NUMBER: _ClassVar[int]
        CREATEDLISTSIZE_FIELD_NUMBER: _ClassVar[int]
        DELETEDINODE_FIELD_NUMBER: _ClassVar[int]
        DELETEDINODEREF_FIELD_NUMBER: _ClassVar[int]
        snapshotId: int
        childrenSize: int
        isSnapshotRoot: bool
        name: bytes
        snapshotCopy: INodeSection.INodeDirectory
        createdListSize: int
        deletedINode: _containers.RepeatedScalarFieldContainer[int]
        deletedINodeRef: _containers.RepeatedScalarFieldContainer[int]
        def __init__(self, snapshotId: _Optional[int] = ..., childrenSize: _Optional[int] = ..., isSnapshotRoot: _Optional[bool] = ..., name: _Optional[bytes] = ..., snapshotCopy: _Optional[_Union[INodeSection.INodeDirectory, _Mapping]] = ..., createdListSize: _Optional[int] = ..., deletedINode: _Optional[_Iterable[int]] = ..., deletedINodeRef: _Optional[_Iterable[int]] = ...) -> None: ...
    class FileDiff(_message.Message):
        __slots__ = ("snapshotId", "fileSize", "name", "snapshotCopy", "blocks")
        SNAPSHOTID_FIELD_NUMBER: _ClassVar[int]
        FILESIZE_FIELD_NUMBER: _ClassVar[int]
        NAME_FIELD_NUMBER: _ClassVar[int]
        SNAPSHOTCOPY_FIELD_NUMBER: _ClassVar[int]
        BLOCKS_FIELD_NUMBER: _ClassVar[int]
        snapshotId: int
        fileSize: int
        name: bytes
        snapshotCopy: INodeSection.INodeFile
        blocks: _containers.RepeatedCompositeFieldContainer[BlockProto]
        def __init__(self, snapshotId: _Optional[int] = ..., fileSize: _Optional[int] = ..., name: _Optional[bytes] = ..., snapshotCopy: _Optional[_Union[INodeSection.INodeFile, _Mapping]] = ..., blocks: _Optional[_Iterable[_Union[BlockProto, _Mapping]]] = ...) -> None: ...
    class DiffEntry(_message.Message):
        __slots__ = ("type", "inodeId", "numOfDiff")
        class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
            __slots__ = ()
            FILEDIFF: _ClassVar[SnapshotDiffSection.DiffEntry.Type]
            DIRECTORYDIFF: _ClassVar[SnapshotDiffSection.DiffEntry.Type]
        FILEDIFF: SnapshotDiffSection.DiffEntry.Type
        DIRECTORYDIFF: SnapshotDiffSection.DiffEntry.Type
        TYPE_FIELD_NUMBER: _ClassVar[int]
        INODEID_FIELD_NUMBER: _ClassVar[int]
        NUMOFDIFF_FIELD_NUMBER: _ClassVar[int]
        type: SnapshotDiffSection.DiffEntry.Type
        inodeId: int
        numOfDiff: int
        def __init__(self, type: _Optional[_Union[SnapshotDiffSection.DiffEntry.Type, str]] = ..., inodeId: _Optional[int] = ..., numOfDiff: _Optional[int] = ...) -> None: ...
    def __init__(self) -> None: ...

class StringTableSection(_message.Message):
    __slots__ = ("numEntry",)
    class Entry(_message.Message):
        __slots__ = ("id", "str")
        ID_FIELD_NUMBER: _ClassVar[int]
        STR_FIELD_NUMBER: _ClassVar[int]
        id: int
        str: str
        def __init__(self, id: _Optional[int] = ..., str: _Optional[str] = ...) -> None: ...
    NUMENTRY_FIELD_NUMBER: _ClassVar[int]
    numEntry: int
    def __init__(self, numEntry: _Optional[int] = ...) -> None: ...

class SecretManagerSection(_message.Message):
    __slots__ = ("currentId", "tokenSequenceNumber", "numKeys", "numTokens")
    class DelegationKey(_message.Message):
        __slots__ = ("id", "expiryDate", "key")
        ID_FIELD_NUMBER: _ClassVar[int]
        EXPIRYDATE_FIELD_NUMBER: _ClassVar[int]
        KEY_FIELD_NUMBER: _ClassVar[int]
        id: int
        expiryDate: int
        key: bytes
        def __init__(self, id: _Optional[int] = ..., expiryDate: _Optional[int] = ..., key: _Optional[bytes] = ...) -> None: ...
    class PersistToken(_message.Message):
        __slots__ = ("version", "owner", "renewer", "realUser", "issueDate", "maxDate", "sequenceNumber", "masterKeyId", "expiryDate")
        VERSION_FIELD_NUMBER: _ClassVar[int]
        OWNER_FIELD_NUMBER: _ClassVar[int]
        RENEWER_FIELD_NUMBER: _ClassVar[int]
        REALUSER_FIELD_NUMBER: _ClassVar[int]
        ISSUEDATE_FIELD_NUMBER: _ClassVar[int]
        MAXDATE_FIELD_NUMBER: _ClassVar[int]
        SEQUENCENUMBER_FIELD_NUMBER: _ClassVar[int]
        MASTERKEYID_FIELD_NUMBER: _ClassVar[int]
        EXPIRYDATE_FIELD_NUMBER: _ClassVar[int]
        version: int
        owner: str
        renewer: str
        realUser: str
        issueDate: int
        maxDate: int
        sequenceNumber: int
        masterKeyId: int
        expiryDate: int
        def __init__(self, version: _Optional[int] = ..., owner: _Optional[str] = ..., renewer: _Optional[str] = ..., realUser: _Optional[str] = ..., issueDate: _Optional[int] = ..., maxDate: _Optional[int] = ..., sequenceNumber: _Optional[int] = ..., masterKeyId: _Optional[int] = ..., expiryDate: _Optional[int] = ...) -> None: ...
    CURRENTID_FIELD_NUMBER: _ClassVar[int]
    TOKENSEQUENCENUMBER_FIELD_NUMBER: _ClassVar[int]
    NUMKEYS_FIELD_NUMBER: _ClassVar[int]
    NUMTOKENS_FIELD_NUMBER: _ClassVar[int]
    currentId: int
    tokenSequenceNumber: int
    numKeys: int
    numTokens: int
    def __init__(self, currentId: _Optional[int] = ..., tokenSequenceNumber: _Optional[int] = ..., numKeys: _Optional[int] = ..., numTokens: _Optional[int] = ...) -> None: ...

class CacheManagerSection(_message.Message):
    __slots__ = ("nextDirectiveId", "numPools", "numDirectives")
    NEXTDIRECTIVEID_FIELD_NUMBER: _ClassVar[int]
    NUMPOOLS_FIELD_NUMBER: _ClassVar[int]
    NUMDIRECTIVES_FIELD_NUMBER: _ClassVar[int]
    nextDirectiveId: int
    numPools: int
    numDirectives: int
    def __init__(self, nextDirectiveId: _Optional[int] = ..., numPools: _Optional[int] = ..., numDirectives: _Optional[int] = ...) -> None: ...

class ECSchemaOptionEntryProto(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ECSchemaProto(_message.Message):
    __slots__ = ("codecName", "dataUnits", "parityUnits", "options")
    CODECNAME_FIELD_NUMBER: _ClassVar[int]
    DATAUNITS_FIELD_NUMBER: _ClassVar[int]
    PARITYUNITS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    codecName: str
    dataUnits: int
    parityUnits: int
    options: _containers.RepeatedCompositeFieldContainer[ECSchemaOptionEntryProto]
    def __init__(self, codecName: _Optional[str] = ..., dataUnits: _Optional[int] = ..., parityUnits: _Optional[int] = ..., options: _Optional[_Iterable[_Union[ECSchemaOptionEntryProto, _Mapping]]] = ...) -> None: ...

class ErasureCodingPolicyProto(_message.Message):
    __slots__ = ("name", "schema", "cellSize", "id", "state")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    CELLSIZE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    schema: ECSchemaProto
    cellSize: int
    id: int
    state: ErasureCodingPolicyState
    def __init__(self, name: _Optional[str] = ..., schema: _Optional[_Union[ECSchemaProto, _Mapping]] = ..., cellSize: _Optional[int] = ..., id: _Optional[int] = ..., state: _Optional[_Union[ErasureCodingPolicyState, str]] = ...) -> None: ...

class ErasureCodingSection(_message.Message):
    __slots__ = ("policies",)
    POLICIES_FIELD_NUMBER: _ClassVar[int]
    policies: _containers.RepeatedCompositeFieldContainer[ErasureCodingPolicyProto]
    def __init__(self, policies: _Optional[_Iterable[_Union[ErasureCodingPolicyProto, _Mapping]]] = ...) -> None: ...
