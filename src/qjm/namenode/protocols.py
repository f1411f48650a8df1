"""The NameNode's RPC protocols (HDFS's client protocol and HA admin): names and methods."""

from __future__ import annotations

from qjm.hdfs.proto import Security_pb2 as sec
from qjm.ipc import MethodSpec, method_table
from qjm.namenode.proto import ClientNamenodeProtocol_pb2 as cn
from qjm.namenode.proto import HAServiceProtocol_pb2 as ha

CLIENT_PROTOCOL = "org.apache.hadoop.hdfs.protocol.ClientProtocol"
HA_SERVICE_PROTOCOL = "org.apache.hadoop.ha.HAServiceProtocol"


CLIENT_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec("getFileInfo", cn.GetFileInfoRequestProto, cn.GetFileInfoResponseProto),
    MethodSpec("getListing", cn.GetListingRequestProto, cn.GetListingResponseProto),
    MethodSpec("mkdirs", cn.MkdirsRequestProto, cn.MkdirsResponseProto),
    MethodSpec("create", cn.CreateRequestProto, cn.CreateResponseProto),
    MethodSpec("complete", cn.CompleteRequestProto, cn.CompleteResponseProto),
    MethodSpec("rename", cn.RenameRequestProto, cn.RenameResponseProto),
    MethodSpec("rename2", cn.Rename2RequestProto, cn.Rename2ResponseProto),
    MethodSpec("delete", cn.DeleteRequestProto, cn.DeleteResponseProto),
    MethodSpec("setPermission", cn.SetPermissionRequestProto, cn.SetPermissionResponseProto),
    MethodSpec("setOwner", cn.SetOwnerRequestProto, cn.SetOwnerResponseProto),
    MethodSpec("setReplication", cn.SetReplicationRequestProto, cn.SetReplicationResponseProto),
    MethodSpec("setTimes", cn.SetTimesRequestProto, cn.SetTimesResponseProto),
    MethodSpec(
        "getContentSummary",
        cn.GetContentSummaryRequestProto,
        cn.GetContentSummaryResponseProto,
    ),
    MethodSpec(
        "getServerDefaults",
        cn.GetServerDefaultsRequestProto,
        cn.GetServerDefaultsResponseProto,
    ),
    # Hadoop's own spelling: a "Status" request answered by a "Stats" response.
    MethodSpec("getFsStats", cn.GetFsStatusRequestProto, cn.GetFsStatsResponseProto),
    MethodSpec("renewLease", cn.RenewLeaseRequestProto, cn.RenewLeaseResponseProto),
    MethodSpec("reportBadBlocks", cn.ReportBadBlocksRequestProto, cn.ReportBadBlocksResponseProto),
    MethodSpec("refreshNodes", cn.RefreshNodesRequestProto, cn.RefreshNodesResponseProto),
    # dfsadmin's administration calls (design §N.11)
    MethodSpec("saveNamespace", cn.SaveNamespaceRequestProto, cn.SaveNamespaceResponseProto),
    MethodSpec("rollEdits", cn.RollEditsRequestProto, cn.RollEditsResponseProto),
    MethodSpec("metaSave", cn.MetaSaveRequestProto, cn.MetaSaveResponseProto),
    MethodSpec(
        "listCorruptFileBlocks",
        cn.ListCorruptFileBlocksRequestProto,
        cn.ListCorruptFileBlocksResponseProto,
    ),
    MethodSpec("msync", cn.MsyncRequestProto, cn.MsyncResponseProto),
    # delegation tokens (design §S.10)
    MethodSpec(
        "getDelegationToken",
        sec.GetDelegationTokenRequestProto,
        sec.GetDelegationTokenResponseProto,
    ),
    MethodSpec(
        "renewDelegationToken",
        sec.RenewDelegationTokenRequestProto,
        sec.RenewDelegationTokenResponseProto,
    ),
    MethodSpec(
        "cancelDelegationToken",
        sec.CancelDelegationTokenRequestProto,
        sec.CancelDelegationTokenResponseProto,
    ),
    MethodSpec(
        "getHAServiceState",
        cn.HAServiceStateRequestProto,
        cn.HAServiceStateResponseProto,
    ),
    # What real clients (FsShell, hdfs-native) call beyond the above: answered where no
    # DataNode is needed, else refused with a clear "not supported" error.
    MethodSpec(
        "getBlockLocations", cn.GetBlockLocationsRequestProto, cn.GetBlockLocationsResponseProto
    ),
    MethodSpec(
        "getLocatedFileInfo",
        cn.GetLocatedFileInfoRequestProto,
        cn.GetLocatedFileInfoResponseProto,
    ),
    MethodSpec("getFileLinkInfo", cn.GetFileLinkInfoRequestProto, cn.GetFileLinkInfoResponseProto),
    MethodSpec("getQuotaUsage", cn.GetQuotaUsageRequestProto, cn.GetQuotaUsageResponseProto),
    MethodSpec("setQuota", cn.SetQuotaRequestProto, cn.SetQuotaResponseProto),
    MethodSpec(
        "getPreferredBlockSize",
        cn.GetPreferredBlockSizeRequestProto,
        cn.GetPreferredBlockSizeResponseProto,
    ),
    MethodSpec("isFileClosed", cn.IsFileClosedRequestProto, cn.IsFileClosedResponseProto),
    MethodSpec("fsync", cn.FsyncRequestProto, cn.FsyncResponseProto),
    MethodSpec("setSafeMode", cn.SetSafeModeRequestProto, cn.SetSafeModeResponseProto),
    MethodSpec("checkAccess", cn.CheckAccessRequestProto, cn.CheckAccessResponseProto),
    MethodSpec("getAclStatus", cn.GetAclStatusRequestProto, cn.GetAclStatusResponseProto),
    MethodSpec("getXAttrs", cn.GetXAttrsRequestProto, cn.GetXAttrsResponseProto),
    MethodSpec("listXAttrs", cn.ListXAttrsRequestProto, cn.ListXAttrsResponseProto),
    MethodSpec(
        "listEncryptionZones",
        cn.ListEncryptionZonesRequestProto,
        cn.ListEncryptionZonesResponseProto,
    ),
    MethodSpec("getEZForPath", cn.GetEZForPathRequestProto, cn.GetEZForPathResponseProto),
    # files with blocks on DataNodes (design §B.14)
    MethodSpec("addBlock", cn.AddBlockRequestProto, cn.AddBlockResponseProto),
    MethodSpec("abandonBlock", cn.AbandonBlockRequestProto, cn.AbandonBlockResponseProto),
    MethodSpec("append", cn.AppendRequestProto, cn.AppendResponseProto),
    MethodSpec("truncate", cn.TruncateRequestProto, cn.TruncateResponseProto),
    MethodSpec("concat", cn.ConcatRequestProto, cn.ConcatResponseProto),
    MethodSpec(
        "getAdditionalDatanode",
        cn.GetAdditionalDatanodeRequestProto,
        cn.GetAdditionalDatanodeResponseProto,
    ),
    MethodSpec(
        "updateBlockForPipeline",
        cn.UpdateBlockForPipelineRequestProto,
        cn.UpdateBlockForPipelineResponseProto,
    ),
    MethodSpec("updatePipeline", cn.UpdatePipelineRequestProto, cn.UpdatePipelineResponseProto),
    MethodSpec(
        "getDatanodeReport", cn.GetDatanodeReportRequestProto, cn.GetDatanodeReportResponseProto
    ),
    # refused: block recovery, ACLs and extended attributes qjm does not keep
    MethodSpec("recoverLease", cn.RecoverLeaseRequestProto, cn.RecoverLeaseResponseProto),
    MethodSpec(
        "modifyAclEntries", cn.ModifyAclEntriesRequestProto, cn.ModifyAclEntriesResponseProto
    ),
    MethodSpec(
        "removeAclEntries", cn.RemoveAclEntriesRequestProto, cn.RemoveAclEntriesResponseProto
    ),
    MethodSpec(
        "removeDefaultAcl", cn.RemoveDefaultAclRequestProto, cn.RemoveDefaultAclResponseProto
    ),
    MethodSpec("removeAcl", cn.RemoveAclRequestProto, cn.RemoveAclResponseProto),
    MethodSpec("setAcl", cn.SetAclRequestProto, cn.SetAclResponseProto),
    MethodSpec("setXAttr", cn.SetXAttrRequestProto, cn.SetXAttrResponseProto),
    MethodSpec("removeXAttr", cn.RemoveXAttrRequestProto, cn.RemoveXAttrResponseProto),
)

HA_SERVICE_METHODS: dict[str, MethodSpec] = method_table(
    MethodSpec("monitorHealth", ha.MonitorHealthRequestProto, ha.MonitorHealthResponseProto),
    MethodSpec(
        "getServiceStatus",
        ha.GetServiceStatusRequestProto,
        ha.GetServiceStatusResponseProto,
    ),
    MethodSpec(
        "transitionToActive",
        ha.TransitionToActiveRequestProto,
        ha.TransitionToActiveResponseProto,
    ),
    MethodSpec(
        "transitionToStandby",
        ha.TransitionToStandbyRequestProto,
        ha.TransitionToStandbyResponseProto,
    ),
)

PROTOCOLS: dict[str, dict[str, MethodSpec]] = {
    CLIENT_PROTOCOL: CLIENT_METHODS,
    HA_SERVICE_PROTOCOL: HA_SERVICE_METHODS,
}
