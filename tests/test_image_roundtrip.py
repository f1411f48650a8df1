"""Images we write read back the same, through the reader and the XML printer."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qjm.editlog.file_names import image_file_name
from qjm.editlog.ops.types import AclEntry, Block, XAttr
from qjm.namenode.image import (
    ROOT_INODE_ID,
    EcPolicy,
    ImageContents,
    Inode,
    NameSystemInfo,
    encode_image,
    load_image,
    read_image,
    read_summary_from_file,
    write_image,
)
from qjm.namenode.image.views import iter_delimited, iter_file_distribution, iter_json_lines
from qjm.namenode.image.xml import image_to_xml


def sample() -> ImageContents:
    root = Inode(
        ROOT_INODE_ID, "DIRECTORY", "", "hdfs", "supergroup", 0o755, mtime=5, ns_quota=2**63 - 1
    )
    d = Inode(
        16386,
        "DIRECTORY",
        "user",
        "alice",
        "staff",
        0o1777,
        mtime=6,
        ns_quota=100,
        ds_quota=10**9,
        type_quotas=(("SSD", 1000),),
        acls=(AclEntry("DEFAULT", "USER", "bob", "r-x"),),
    )
    f = Inode(
        16387,
        "FILE",
        "data.csv",
        "alice",
        "staff",
        0o644,
        mtime=7,
        atime=8,
        replication=3,
        preferred_block_size=128 << 20,
        blocks=(Block(1073741825, 128 << 20, 1001), Block(1073741826, 5, 1002)),
        xattrs=(XAttr("USER", "k", b"v"), XAttr("RAW", "r", None)),
        storage_policy_id=7,
    )
    uc = Inode(
        16388,
        "FILE",
        "open file \u00e9",
        "bob",
        "staff",
        0o600,
        mtime=9,
        atime=9,
        replication=1,
        preferred_block_size=1024,
        blocks=(Block(1073741827, 0, 1003),),
        client_name="DFSClient_1",
        client_machine="10.0.0.1",
    )
    ec = Inode(
        16389,
        "FILE",
        "striped",
        "bob",
        "staff",
        0o640,
        replication=1,
        blocks=(Block(-(2**62), 6, 1004),),
        erasure_coding_policy_id=1,
    )
    link = Inode(
        16390,
        "SYMLINK",
        "link",
        "alice",
        "staff",
        0o777,
        mtime=10,
        atime=11,
        target="/user/data.csv",
    )
    return ImageContents(
        ns_info=NameSystemInfo(
            namespace_id=42,
            txid=1234,
            genstamp_v2=1004,
            last_allocated_block_id=1073741827,
            last_allocated_striped_block_id=-(2**62),
        ),
        inodes=[root, d, f, uc, ec, link],
        parents={
            16386: ROOT_INODE_ID,
            16387: 16386,
            16388: 16386,
            16389: ROOT_INODE_ID,
            16390: 16386,
        },
        ec_policies=[EcPolicy(1, "ENABLED", "RS-6-3-1024k", "rs", 6, 3, 1024 * 1024)],
    )


def test_write_read_roundtrip(tmp_path: Path) -> None:
    contents = sample()
    path = tmp_path / image_file_name(1234)
    digest = write_image(path, contents)
    assert path.name == "fsimage_0000000000000001234"
    assert (tmp_path / (path.name + ".md5")).read_text() == f"{digest} *{path.name}\n"
    image = read_image(path)
    assert list(image.inodes.values()) == contents.inodes
    assert image.parents == contents.parents
    assert image.ns_info == contents.ns_info
    assert image.ec_policies == contents.ec_policies
    assert image.files_under_construction == [(16388, "/user/open file \u00e9")]
    assert image.path(16390) == "/user/link"
    assert encode_image(image.to_contents()) == path.read_bytes()
    s = read_summary_from_file(path)
    assert s.layout_version == -64 and s.section("STRING_TABLE") is not None


def test_xml_and_text_views_of_our_image(tmp_path: Path) -> None:
    path = tmp_path / "fsimage_0000000000000001234"
    write_image(path, sample())
    image = read_image(path)
    root = ET.fromstring(image_to_xml(image))
    inodes = root.findall("INodeSection/inode")
    assert [i.findtext("name") for i in inodes] == [
        "",
        "user",
        "data.csv",
        "open file \u00e9",
        "striped",
        "link",
    ]
    user = inodes[1]
    assert user.findtext("permission") == "alice:staff:rwxrwxrwt"
    assert user.findtext("acls/acl") == "default:user:bob:r-x"
    f = inodes[2]
    assert [b.findtext("numBytes") for b in f.findall("blocks/block")] == [str(128 << 20), "5"]
    assert inodes[3].findtext("file-under-construction/clientName") == "DFSClient_1"
    assert inodes[5].findtext("target") == "/user/data.csv"
    assert root.findtext("INodeDirectorySection/directory/parent") == str(ROOT_INODE_ID)
    rows = "".join(iter_delimited(image)).splitlines()
    assert [r.split("\t")[0] for r in rows[1:]] == [
        "/",
        "/user",
        "/user/data.csv",
        "/user/open file \u00e9",
        "/striped",
        "/user/link",
    ]
    assert rows[3].split("\t")[6] == str((128 << 20) + 5)
    assert len(list(iter_json_lines(image))) == 6
    dist = "".join(iter_file_distribution(image))
    assert "totalFiles = 3" in dist and "totalDirectories = 2" in dist


names = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters="/"), min_size=1, max_size=8
)


@st.composite
def trees(draw: st.DrawFn) -> ImageContents:
    root = Inode(ROOT_INODE_ID, "DIRECTORY", "", "root", "root", 0o755)
    inodes = [root]
    parents: dict[int, int] = {}
    dirs = [ROOT_INODE_ID]
    used: dict[int, set[str]] = {ROOT_INODE_ID: set()}
    for k in range(draw(st.integers(0, 25))):
        iid = ROOT_INODE_ID + 1 + k
        parent = draw(st.sampled_from(dirs))
        name = draw(names.filter(lambda n, p=parent: n not in used[p]))
        used[parent].add(name)
        kind = draw(st.sampled_from(["FILE", "DIRECTORY", "SYMLINK"]))
        user = draw(st.sampled_from(["a", "b", "ü"]))
        mode = draw(st.integers(0, 0o1777))
        t = draw(st.integers(0, 2**62))
        if kind == "FILE":
            blocks = tuple(
                Block(
                    draw(st.integers(-(2**63), 2**63 - 1)),
                    draw(st.integers(0, 2**40)),
                    draw(st.integers(0, 2**40)),
                )
                for _ in range(draw(st.integers(0, 3)))
            )
            node = Inode(
                iid,
                kind,
                name,
                user,
                "g",
                mode,
                mtime=t,
                atime=t // 2,
                replication=draw(st.integers(0, 512)),
                preferred_block_size=2**27,
                blocks=blocks,
            )
        elif kind == "DIRECTORY":
            node = Inode(
                iid,
                kind,
                name,
                user,
                "g",
                mode,
                mtime=t,
                ns_quota=draw(st.integers(-1, 2**63 - 1)),
                ds_quota=draw(st.integers(-1, 2**63 - 1)),
            )
            dirs.append(iid)
            used[iid] = set()
        else:
            node = Inode(iid, kind, name, user, "g", mode, mtime=t, atime=t, target=draw(names))
        inodes.append(node)
        parents[iid] = parent
    return ImageContents(
        ns_info=NameSystemInfo(
            namespace_id=draw(st.integers(0, 2**32 - 1)), txid=draw(st.integers(0, 2**63 - 1))
        ),
        inodes=inodes,
        parents=parents,
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(trees())
def test_random_trees_roundtrip(contents: ImageContents) -> None:
    image = load_image(encode_image(contents))
    assert list(image.inodes.values()) == contents.inodes
    assert image.parents == contents.parents
    assert image.ns_info == contents.ns_info
    assert len(image.paths()) == len(contents.inodes)
    root = ET.fromstring(image_to_xml(image))
    assert len(root.findall("INodeSection/inode")) == len(contents.inodes)
