"""NNStorage: the name dir's layout, lock, VERSION, seen_txid, images; FSImage loading."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from qjm.namenode.fs_image import NoImageError, load_newest
from qjm.namenode.image import FsImage, ImageContents, NameSystemInfo, md5_path, read_image
from qjm.namenode.storage import (
    NameDirLocked,
    NamespaceInfo,
    NNStorage,
    StorageFormatError,
    empty_image,
)

NSI = NamespaceInfo(
    namespace_id=4242, cluster_id="CID-abc", block_pool_id="BP-1-127.0.0.1-0", ctime=0
)


class FakeNs:
    """A namespace stand-in whose image is the empty tree at the asked txid."""

    def __init__(self, image: FsImage | None = None) -> None:
        self.image = image

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The empty namespace at txid, with ns_info's counters (as the real one keeps them)."""
        image = empty_image(ns_info.namespace_id, txid, owner="hdfs")
        image.ns_info = dataclasses.replace(ns_info, txid=txid)
        return image


def test_format_writes_hdfs_layout(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        cur = tmp_path / "name" / "current"
        names = sorted(p.name for p in cur.iterdir())
        assert names == [
            "VERSION",
            "fsimage_0000000000000000000",
            "fsimage_0000000000000000000.md5",
            "seen_txid",
        ]
        version = (cur / "VERSION").read_text()
        for line in (
            "namespaceID=4242",
            "clusterID=CID-abc",
            "cTime=0",
            "storageType=NAME_NODE",
            "blockpoolID=BP-1-127.0.0.1-0",
            "layoutVersion=-64",
        ):
            assert line in version.splitlines(), (line, version)
        assert (cur / "seen_txid").read_text() == "0\n"
        assert st.read_ns_info() == NSI
        image = read_image(cur / "fsimage_0000000000000000000")
        assert image.ns_info.namespace_id == 4242 and image.ns_info.txid == 0
        assert list(image.inodes) == [16385]
        assert (tmp_path / "name" / "in_use.lock").exists()


def test_format_refuses_a_dir_with_data_unless_forced(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        st.write_seen_txid(55)
        with pytest.raises(StorageFormatError, match="not empty.*--force"):
            st.format(NSI)
        assert st.seen_txid == 55
        other = NamespaceInfo(namespace_id=1, cluster_id="CID-new")
        st.format(other, force=True)
        assert st.read_ns_info().cluster_id == "CID-new"
        assert st.seen_txid == 0


@pytest.mark.slow
def test_a_second_user_of_the_name_dir_is_refused(tmp_path: Path) -> None:
    st = NNStorage(tmp_path / "name")
    with pytest.raises(NameDirLocked, match=r"cannot lock name dir .*name.*in use.*pid"):
        NNStorage(tmp_path / "name")
    # Another process is refused too, and succeeds once the lock is released.
    code = (
        "import sys; from qjm.namenode.storage import NNStorage, NameDirLocked\n"
        "try:\n    NNStorage(sys.argv[1])\nexcept NameDirLocked as e:\n"
        "    print(e); sys.exit(3)\n"
    )
    env_path = str(Path(__file__).resolve().parents[1] / "src")
    run = [sys.executable, "-c", code, str(tmp_path / "name")]
    r = subprocess.run(run, capture_output=True, text=True, env={"PYTHONPATH": env_path})
    assert r.returncode == 3 and "in use" in r.stdout, r
    st.unlock()
    r = subprocess.run(run, capture_output=True, text=True, env={"PYTHONPATH": env_path})
    assert r.returncode == 0, r


def test_unformatted_dir_is_named(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        assert not st.is_formatted()
        with pytest.raises(StorageFormatError, match=r"not formatted.*qjm namenode format"):
            st.read_ns_info()
        assert st.seen_txid == 0


def test_seen_txid_is_replaced_atomically(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        st.write_seen_txid(123)
        assert st.seen_txid == 123
        assert not list(st.current.glob("*.tmp"))
        (st.current / "seen_txid").write_text("garbage")
        with pytest.raises(StorageFormatError, match="seen_txid holds 'garbage'"):
            _ = st.seen_txid


def test_images_save_install_purge(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        p10 = st.save_image(FakeNs(), 10)
        assert p10.name == "fsimage_0000000000000000010" and md5_path(p10).exists()
        assert [t for t, _ in st.images()] == [0, 10]
        data = p10.read_bytes()
        good = hashlib.md5(data).hexdigest()
        with pytest.raises(StorageFormatError, match="MD5"):
            st.install_image(data, 20, "0" * 32)
        assert [t for t, _ in st.images()] == [0, 10]
        st.install_image(data, 20, good)
        newest = st.newest_image()
        assert newest is not None and newest[0] == 20
        assert read_image(newest[1]).ns_info.namespace_id == 4242
        # Local edits wholly below the oldest kept image go with the images.
        for name in (
            "edits_0000000000000000001-0000000000000000005",
            "edits_inprogress_0000000000000000021",
        ):
            (st.current / name).write_bytes(b"")
        removed = st.purge(2)
        assert sorted(p.name for p in removed) == [
            "edits_0000000000000000001-0000000000000000005",
            "fsimage_0000000000000000000",
            "fsimage_0000000000000000000.md5",
        ]
        assert [t for t, _ in st.images()] == [10, 20]
        assert st.purge(2) == []


def test_load_newest_falls_back_to_an_older_image(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        st.save_image(FakeNs(), 10)
        ns, txid = load_newest(st, FakeNs)
        assert txid == 10 and ns.image is not None and ns.image.ns_info.txid == 10
        p = st.image_path(10)
        raw = bytearray(p.read_bytes())
        raw[20] ^= 0xFF
        p.write_bytes(bytes(raw))  # the md5 no longer matches
        ns, txid = load_newest(st, FakeNs)
        assert txid == 0
        st.image_path(0).write_bytes(b"junk")
        with pytest.raises(NoImageError, match=r"no image in .* can be loaded: fsimage_0+10"):
            load_newest(st, FakeNs)


def test_the_column_loader_falls_back_to_an_older_image_too(tmp_path: Path) -> None:
    """The NameNode's start-up path (load_namespace per file) refuses a damaged or mislabelled
    newest image and takes the older one, as the general path does."""
    from qjm.namenode.image.md5 import md5_of_file, write_md5_file
    from qjm.namenode.namespace import load_namespace

    def loader(path: Path) -> tuple[object, int]:
        ns, info = load_namespace(path, superuser="hdfs")
        return ns, info.txid

    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        st.save_image(FakeNs(), 10)
        assert load_newest(st, FakeNs, path_loader=loader)[1] == 10
        p = st.image_path(10)
        raw = bytearray(p.read_bytes())
        raw[20] ^= 0xFF
        p.write_bytes(bytes(raw))  # the md5 no longer matches
        assert load_newest(st, FakeNs, path_loader=loader)[1] == 0
        p.unlink()
        md5_path(p).unlink()
        st.save_image(FakeNs(), 7)
        st.image_path(7).rename(st.image_path(12))  # holds txid 7, named 12, a valid md5
        md5_path(st.image_path(7)).unlink()
        write_md5_file(st.image_path(12), md5_of_file(st.image_path(12)))
        with pytest.raises(NoImageError, match="says it is at txid 7"):
            st.image_path(0).write_bytes(b"junk")
            load_newest(st, FakeNs, path_loader=loader)


def test_no_image_at_all(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st, pytest.raises(NoImageError, match="holds no fsimage"):
        load_newest(st, FakeNs)


def test_a_new_image_keeps_the_generation_stamps_of_the_newest(tmp_path: Path) -> None:
    with NNStorage(tmp_path / "name") as st:
        st.format(NSI)
        stamped = empty_image(4242, 5, owner="hdfs")
        stamped.ns_info = NameSystemInfo(
            namespace_id=4242, txid=5, genstamp_v2=1234, last_allocated_block_id=(1 << 30) + 77
        )
        st.save_image_contents(stamped)
        st.save_image(FakeNs(), 9)
        image = read_image(st.image_path(9))
        assert image.ns_info.txid == 9
        assert image.ns_info.genstamp_v2 == 1234
        assert image.ns_info.last_allocated_block_id == (1 << 30) + 77
