"""HDFS's protobuf fsimage (layout -64): read, write, section-level access and the .md5 file.

image = read_image(path)                      # whole image, md5 checked when present
digest = write_image(path, ImageContents(...))
summary = read_summary_from_file(path)        # the section index only
raw = read_section(path, summary.section("INODE"), summary.codec)
"""

from __future__ import annotations

from qjm.namenode.image.format import (
    LAYOUT_VERSION,
    MAGIC,
    ImageError,
    SectionInfo,
    Summary,
    read_summary,
)
from qjm.namenode.image.md5 import md5_of_file, md5_path, read_md5_file, verify_md5
from qjm.namenode.image.model import (
    DIRECTORY,
    FILE,
    ROOT_INODE_ID,
    SYMLINK,
    EcPolicy,
    ImageContents,
    Inode,
    NameSystemInfo,
)
from qjm.namenode.image.reader import FsImage, load_image, read_image
from qjm.namenode.image.sections import (
    DirEntry,
    decode_ns_info,
    decode_string_table,
    iter_dir_entries,
    iter_inodes,
    read_section,
    read_summary_from_file,
)
from qjm.namenode.image.writer import encode_image, write_image

__all__ = [
    "DIRECTORY",
    "FILE",
    "LAYOUT_VERSION",
    "MAGIC",
    "ROOT_INODE_ID",
    "SYMLINK",
    "DirEntry",
    "EcPolicy",
    "FsImage",
    "ImageContents",
    "ImageError",
    "Inode",
    "NameSystemInfo",
    "SectionInfo",
    "Summary",
    "decode_ns_info",
    "decode_string_table",
    "encode_image",
    "iter_dir_entries",
    "iter_inodes",
    "load_image",
    "md5_of_file",
    "md5_path",
    "read_image",
    "read_md5_file",
    "read_section",
    "read_summary",
    "read_summary_from_file",
    "verify_md5",
    "write_image",
]
