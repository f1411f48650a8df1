"""The `<image>.md5` file beside an fsimage, in HDFS's format: `<hex digest> *<file name>`."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from qjm.namenode.image.format import ImageError

_LINE = re.compile(r"^([0-9a-fA-F]{32}) [ *](.+)$")


def md5_path(image: str | os.PathLike[str]) -> Path:
    """Where an image's MD5 file lives."""
    p = Path(image)
    return p.with_name(p.name + ".md5")


def md5_of_file(path: str | os.PathLike[str]) -> str:
    """The hex MD5 digest of a file's contents."""
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def md5_line(digest: str, image_name: str) -> str:
    """The MD5 file's single line (with its newline), as HDFS's MD5FileUtils writes it."""
    return f"{digest} *{image_name}\n"


def write_md5_file(image: str | os.PathLike[str], digest: str) -> Path:
    """Write `<image>.md5` atomically (temp, fsync, rename); return its path."""
    target = md5_path(image)
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="ascii") as f:
        f.write(md5_line(digest, Path(image).name))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, target)
    return target


def read_md5_file(image: str | os.PathLike[str]) -> str | None:
    """The digest stored for an image, or None when it has no MD5 file."""
    p = md5_path(image)
    try:
        text = p.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise ImageError(f"cannot read {p}: {e}") from None
    m = _LINE.match(text.strip())
    if m is None:
        raise ImageError(f"{p} is not an MD5 file: expected '<32 hex digits> *<name>'")
    if m.group(2) != Path(image).name:
        raise ImageError(f"{p} names {m.group(2)!r}, not {Path(image).name!r}")
    return m.group(1).lower()


def verify_md5(image: str | os.PathLike[str]) -> bool:
    """Check an image against its MD5 file: True if it matches, False if there is none."""
    stored = read_md5_file(image)
    if stored is None:
        return False
    actual = md5_of_file(image)
    if actual != stored:
        raise ImageError(
            f"image {image} does not match its MD5 file: {actual} computed, {stored} stored"
        )
    return True
