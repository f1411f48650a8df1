"""The namespace report on Spark against the single-process route a user has today.

    PYTHONPATH=src python -m benchmarks.spark_namespace [--inodes 1000000]
        [--masters 'local[1],local[2]'] [--keep DIR]

Generates an fsimage of --inodes inodes (directories of 1000 files three levels deep, 7
owners, file sizes 0-256 MiB, modification times over three years), then times:
- `qjm analyze namespace --image IMG --master M` for each master, each in a fresh process
  (wall time including the JVM's start, and the job's own seconds from summary.json);
- the single-process route: `qjm oiv -p Delimited` to a file, then the same tables (totals,
  by depth, owner, age and directory to depth 3) in pandas; skipped when pandas is not
  installed (pyspark 4.3 wants pandas < 3: pip install 'pandas<3').
Prints one JSON object; the totals of both routes must agree.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from qjm.editlog.ops.types import Block
from qjm.namenode.image import ROOT_INODE_ID, ImageContents, Inode, NsInfo, write_image

DAY_MS = 86_400_000
NOW_MS = 1_700_000_000_000


def generate(path: Path, n: int, seed: int = 1) -> Path:
    """An image of n inodes (about 1 directory per 1000 files), written with its .md5."""
    rng = random.Random(seed)
    owners = [f"user{i}" for i in range(7)]
    inodes = [Inode(ROOT_INODE_ID, "DIRECTORY", "", "hdfs", "supergroup", 0o755, mtime=NOW_MS)]
    parents: dict[int, int] = {}
    next_id = ROOT_INODE_ID + 1
    dirs: list[int] = []
    n_dirs = max(1, n // 1000)
    for d in range(n_dirs):  # /d0 .. /d9, then each under an earlier one: three levels
        parent = ROOT_INODE_ID if d < 10 else dirs[(d - 10) // 10 % max(1, len(dirs))]
        owner = owners[d % len(owners)]
        inodes.append(Inode(next_id, "DIRECTORY", f"d{d}", owner, "g", 0o755, mtime=NOW_MS))
        parents[next_id] = parent
        dirs.append(next_id)
        next_id += 1
    block = 1 << 30
    while len(inodes) < n:
        parent = dirs[len(inodes) % len(dirs)]
        size = int(rng.paretovariate(1.2) * 64 * 1024) % (256 << 20)
        mtime = NOW_MS - rng.randrange(3 * 365) * DAY_MS
        blocks = []
        left = size
        while left > 0 or not blocks:
            block += 1
            blocks.append(Block(block, min(left, 128 << 20), 1001))
            left -= 128 << 20
        inodes.append(
            Inode(
                next_id,
                "FILE",
                f"f{next_id}",
                owners[rng.randrange(len(owners))],
                "g",
                0o644,
                mtime=mtime,
                atime=mtime,
                replication=3,
                preferred_block_size=128 << 20,
                blocks=tuple(blocks),
            )
        )
        parents[next_id] = parent
        next_id += 1
    write_image(path, ImageContents(NsInfo(1, 1), inodes, parents, last_inode_id=next_id))
    return path


def run_spark(image: Path, out: Path, master: str) -> dict[str, Any]:
    """`qjm analyze namespace` in a fresh process: wall seconds and its summary."""
    t = time.monotonic()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "qjm", "analyze", "namespace", "--image", str(image)),
            *("--out", str(out), "--master", master, "--quiet", "--as-of", "2023-11-14"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    wall = time.monotonic() - t
    if done.returncode != 0:
        raise SystemExit(f"qjm analyze failed ({master}): {done.stderr.strip()}")
    summary = json.loads((out / "summary.json").read_text())
    return {"wall_s": round(wall, 2), "job_s": summary["seconds"], "summary": summary}


def run_pandas(image: Path, work: Path) -> dict[str, Any] | None:
    """`qjm oiv -p Delimited`, then the same tables in pandas (None without pandas)."""
    try:
        import pandas as pd
    except ImportError:
        return None
    tsv = work / "image.tsv"
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "qjm", "oiv", "-p", "Delimited", "-i", str(image), "-o", str(tsv)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"qjm oiv failed: {done.stderr.strip()}")
    t1 = time.monotonic()
    df = pd.read_csv(tsv, sep="\t", keep_default_na=False)
    is_dir = df["Permission"].str.startswith("d")
    files = df[~is_dir].copy()
    depth = df["Path"].str.count("/").where(df["Path"] != "/", 0)
    df["depth"] = depth
    files["depth"] = depth[~is_dir]
    small = files["FileSize"] < (1 << 20)
    files["small"] = small
    totals = {
        "inodes": len(df),
        "files": len(files),
        "directories": int(is_dir.sum()),
        "bytes": int(files["FileSize"].sum()),
        "small_files": int(small.sum()),
    }
    files.groupby("depth").agg(files=("Path", "size"), bytes=("FileSize", "sum"))
    files.groupby("UserName").agg(files=("Path", "size"), bytes=("FileSize", "sum"))
    mtime = pd.to_datetime(files["ModificationTime"], format="%Y-%m-%d %H:%M")
    age = (pd.Timestamp("2023-11-14") - mtime).dt.days
    pd.cut(age, [-1e9, 1, 7, 30, 90, 365, 3 * 365, 1e9]).value_counts()
    parts = files["Path"].str.split("/")
    for k in range(1, 4):
        inside = files["depth"] > k
        prefix = parts[inside].str[: k + 1].str.join("/")
        files[inside].groupby(prefix).agg(files=("Path", "size"), bytes=("FileSize", "sum"))
    t2 = time.monotonic()
    return {
        "oiv_s": round(t1 - t0, 2),
        "pandas_s": round(t2 - t1, 2),
        "total_s": round(t2 - t0, 2),
        "totals": totals,
    }


def main() -> None:
    """Generate, run each route, print JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inodes", type=int, default=1_000_000)
    ap.add_argument("--masters", default="local[1],local[2]")
    ap.add_argument("--keep", help="directory to keep the image and outputs in")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="qjm-spark-bench-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        t = time.monotonic()
        image = generate(work / "fsimage_0000000000000000001", args.inodes)
        result: dict[str, Any] = {
            "inodes": args.inodes,
            "image_bytes": image.stat().st_size,
            "generate_s": round(time.monotonic() - t, 2),
            "cpus": os.cpu_count(),
            "spark": {},
        }
        for master in args.masters.split(","):
            result["spark"][master] = run_spark(image, work / f"out-{master}", master)
        result["single_process"] = run_pandas(image, work)
        single = result["single_process"]
        if single is not None:
            for master, r in result["spark"].items():
                for k, v in single["totals"].items():
                    assert r["summary"][k] == v, f"{master}: {k} {r['summary'][k]} != {v}"
        for r in result["spark"].values():
            r["summary"] = {k: r["summary"][k] for k in ("inodes", "files", "bytes", "small_files")}
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
