"""The NameNode's namespace in process, without RPC (as HDFS's NNThroughputBenchmark runs it).

    PYTHONPATH=src python -m benchmarks.nn_namespace [--inodes 1000000] [--ops 30000]

- ops/s: mkdirs, create+complete (one file each) and getFileInfo (stat), each call being
  plan (path, permission and quota checks, making the HDFS ops) + apply, by a caller that
  is not a superuser (so every permission check runs); no edit log, no RPC.
- memory per inode: RSS delta (from /proc/self/statm, after gc) of a namespace of --inodes
  inodes built by applying MkdirOp/AddOp/CloseOp (dirs of 1000 files), divided by its inode
  count; measured first, in a fresh process, so nothing freed earlier is reused. Also
  tracemalloc's count for a smaller namespace (--traced-inodes) as a cross-check.
- start-up from an image: that namespace is written as an fsimage (to_image + write_image
  to a temp file), then read_image + from_image are timed (startup_s), and the loader that
  decodes the image straight into the store's columns (startup_fast_loader_s,
  namespace.load_namespace; md5 check included in both).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from qjm.editlog.ops import AddOp, CloseOp, MkdirOp, PermissionStatus
from qjm.namenode.image import NameSystemInfo, read_image, write_image
from qjm.namenode.namespace import Namespace, load_namespace
from qjm.namenode.types import Caller, RpcIds

SUPERUSER = Caller("hdfs")
USER = Caller("bench", ("users",))
FILES_PER_DIR = 1000
BLOCK_SIZE = 128 << 20


def rss_bytes() -> int:
    """This process's resident set size."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def build(inodes: int) -> Namespace:
    """A namespace of `inodes` inodes (root, dirs of FILES_PER_DIR closed files) by apply."""
    ns = Namespace(superuser="hdfs")
    fps = PermissionStatus("bench", "users", 0o644)
    dps = PermissionStatus("bench", "users", 0o755)
    nid = ns.last_inode_id
    d = 0
    while len(ns) < inodes:
        nid += 1
        ns.apply(MkdirOp(inode_id=nid, path=f"/d{d:05d}", timestamp=1, permission_status=dps))
        for f in range(min(FILES_PER_DIR, inodes - len(ns))):
            nid += 1
            path = f"/d{d:05d}/f{f:04d}"
            ns.apply(
                AddOp(
                    inode_id=nid,
                    path=path,
                    replication=3,
                    mtime=2,
                    atime=2,
                    block_size=BLOCK_SIZE,
                    permission_status=fps,
                    client_name="client",
                    client_machine="host",
                )
            )
            ns.apply(
                CloseOp(
                    path=path,
                    replication=3,
                    mtime=3,
                    atime=2,
                    block_size=BLOCK_SIZE,
                    permission_status=fps,
                )
            )
        d += 1
    return ns


def memory(inodes: int) -> tuple[Namespace, dict[str, Any]]:
    """The namespace of `inodes` inodes and its RSS delta per inode."""
    gc.collect()
    before = rss_bytes()
    started = time.perf_counter()
    ns = build(inodes)
    took = time.perf_counter() - started
    gc.collect()
    delta = rss_bytes() - before
    return ns, {
        "inodes": len(ns),
        "method": "RSS delta (/proc/self/statm) around building the namespace, after gc",
        "rss_delta_bytes": delta,
        "bytes_per_inode": round(delta / len(ns), 1),
        "build_by_apply_s": round(took, 2),
        "apply_ops_per_s": round((2 * len(ns)) / took),
    }


def traced(inodes: int) -> dict[str, Any]:
    """tracemalloc's count of the bytes a namespace of `inodes` inodes holds."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        ns = build(inodes)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return {
        "inodes": len(ns),
        "method": "tracemalloc: bytes allocated and still held after building",
        "bytes_per_inode": round(held / len(ns), 1),
    }


def startup(ns: Namespace) -> dict[str, Any]:
    """Write ns as an fsimage, then time loading it back (read_image + from_image)."""
    with tempfile.TemporaryDirectory(prefix="nn-bench-") as tmp:
        path = Path(tmp) / "fsimage_0000000000000000001"
        tc = time.perf_counter()
        ns.copy()  # what a checkpoint holds apply up for, if it images a copy
        copy_s = time.perf_counter() - tc
        t0 = time.perf_counter()
        contents = ns.to_image(1, NameSystemInfo(namespace_id=1, txid=1))
        t1 = time.perf_counter()
        write_image(path, contents)
        t2 = time.perf_counter()
        del contents
        gc.collect()
        size = path.stat().st_size
        t3 = time.perf_counter()
        image = read_image(path)
        t4 = time.perf_counter()
        loaded = Namespace.from_image(image, superuser="hdfs")
        t5 = time.perf_counter()
        ok = len(loaded) == len(ns) and loaded.totals() == ns.totals()
        del image, loaded
        gc.collect()
        t6 = time.perf_counter()
        fast, _ = load_namespace(path, superuser="hdfs")
        t7 = time.perf_counter()
        ok = ok and len(fast) == len(ns) and fast.totals() == ns.totals()
        del fast
        gc.collect()
    return {
        "inodes": len(ns),
        "image_bytes": size,
        "copy_s": round(copy_s, 3),
        "to_image_s": round(t1 - t0, 2),
        "write_image_s": round(t2 - t1, 2),
        "read_image_s": round(t4 - t3, 2),
        "from_image_s": round(t5 - t4, 2),
        "startup_s": round(t5 - t3, 2),
        "startup_fast_loader_s": round(t7 - t6, 2),
        "loaded_equal_size": ok,
    }


def _home(ns: Namespace, path: str) -> None:
    for op in ns.plan_mkdirs(path, SUPERUSER, 0o755, True, 1):
        ns.apply(op)
    for op in ns.plan_set_owner(path, SUPERUSER, USER.user, USER.groups[0]):
        ns.apply(op)


def throughput(n: int) -> dict[str, Any]:
    """ops/s of mkdirs, create+complete and getFileInfo: n calls each, plan + apply."""
    ns = Namespace(superuser="hdfs")
    _home(ns, "/bench")
    rpc = RpcIds(b"0123456789abcdef", 1)
    out: dict[str, Any] = {"calls": n, "caller": "not a superuser (permission checks on)"}
    groups = [f"/bench/mk/g{g:04d}" for g in range((n + FILES_PER_DIR - 1) // FILES_PER_DIR)]
    for g in groups:
        for op in ns.plan_mkdirs(g, USER, 0o755, True, 1):
            ns.apply(op)
    paths = [f"{groups[i // FILES_PER_DIR]}/d{i:07d}" for i in range(n)]
    apply = ns.apply
    clock = time.perf_counter
    started = clock()
    for i, p in enumerate(paths):
        for op in ns.plan_mkdirs(p, USER, 0o755, True, i):
            apply(op)
    out["mkdirs_per_s"] = round(n / (clock() - started))

    files = [p.replace("/mk/", "/cr/") for p in paths]
    for g in groups:
        for op in ns.plan_mkdirs(g.replace("/mk/", "/cr/"), USER, 0o755, True, 1):
            ns.apply(op)
    started = clock()
    for i, p in enumerate(files):
        for op in ns.plan_create(
            p, USER, 0o644, False, True, 3, BLOCK_SIZE, "client", "host", i, rpc
        ):
            apply(op)
        for op in ns.plan_complete(p, USER, "client", 0, i):
            apply(op)
    out["create_complete_per_s"] = round(n / (clock() - started))

    stat = ns.stat
    started = clock()
    for p in files:
        stat(p, USER)
    out["getfileinfo_per_s"] = round(n / (clock() - started))
    return out


def run(inodes: int = 1_000_000, ops: int = 30_000, traced_inodes: int = 50_000) -> dict[str, Any]:
    """Every measurement; a dict ready for JSON."""
    ns, mem = memory(inodes)
    result: dict[str, Any] = {
        "python": sys.version.split()[0],
        "memory": mem,
        "startup": startup(ns),
    }
    del ns
    gc.collect()
    result["memory_traced"] = traced(traced_inodes)
    result["in_process"] = throughput(ops)
    result["goal_bytes_per_inode"] = 300
    result["meets_memory_goal"] = mem["bytes_per_inode"] <= 300
    return result


def main(argv: list[str] | None = None) -> int:
    """Run and print the results as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--inodes", type=int, default=1_000_000)
    ap.add_argument("--ops", type=int, default=30_000)
    ap.add_argument("--traced-inodes", type=int, default=50_000)
    args = ap.parse_args(argv)
    print(json.dumps(run(args.inodes, args.ops, args.traced_inodes), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
