"""`qjm analyze`: Spark jobs over images and edit logs, written as Parquet plus a report.

  qjm analyze namespace --image fsimage_N --out OUT     (or --delimited an oiv dump)
  qjm analyze ops --edits DIR|FILE|qjournal://... --out OUT
  qjm analyze audit --journal qjournal://... --out OUT  (exit 2 when copies differ)

Each writes Parquet tables under OUT, OUT/report.html (plots and tables) and
OUT/summary.json. OUT may be a Hadoop FileSystem URI (hdfs://ns1/reports/x): the output is
made in a local staging directory and copied there through HADOOP_CONF_DIR's configuration.
--master takes any Spark master URL (default local[*]).
"""

from __future__ import annotations

import argparse
import calendar
import concurrent.futures
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from qjm.errors import QjmError
from qjm.spark.output import is_filesystem_uri, upload_tree


class AnalyzeError(QjmError):
    """An analysis job could not run; the message says why."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `qjm analyze`."""
    p = subparsers.add_parser(
        "analyze",
        help="Spark reports on fsimages and edit logs (Parquet + HTML)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="job", required=True, metavar="JOB")

    ns = sub.add_parser("namespace", help="files, bytes, small files by depth, owner, age, dir")
    src = ns.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--image", help="an fsimage file, a name dir (newest image) or http://namenode:port"
    )
    src.add_argument("--delimited", help="`hdfs oiv -p Delimited` output (file or directory)")
    ns.add_argument("--delimiter", default="\t", help="Delimited separator (default tab)")
    ns.add_argument("--time-zone", help="zone of the Delimited times (default local)")
    ns.add_argument("--partitions", type=int, help="image partitions (default: by size)")
    ns.add_argument("--download-dir", help="where an image fetched over HTTP is kept")
    ns.add_argument(
        "--small-file-bytes", type=int, default=1 << 20, help="small below this (1 MiB)"
    )
    ns.add_argument("--as-of", help="date (YYYY-MM-DD, UTC) ages are counted to (default now)")
    _common(ns)
    ns.set_defaults(func=run_namespace)

    ops = sub.add_parser("ops", help="ops by type, over time, hottest paths")
    ops.add_argument("--edits", required=True, help="edits file, directory or qjournal:// URI")
    ops.add_argument("--from", dest="from_txid", type=int, default=1, help="first txid")
    ops.add_argument("--to", dest="to_txid", type=int, help="last txid")
    ops.add_argument("--finalized-only", action="store_true", help="skip in-progress segments")
    _common(ops)
    ops.set_defaults(func=run_ops)

    au = sub.add_parser(
        "audit",
        help="compare every JournalNode's copy of each finalized segment (exit 2: differences)",
    )
    au.add_argument("--journal", required=True, help="qjournal://host:port;.../journal-id")
    _common(au)
    au.set_defaults(func=run_audit)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out", required=True, help="output directory, or an hdfs:// URI (HADOOP_CONF_DIR)"
    )
    p.add_argument("--master", default="local[*]", help="Spark master URL (local[*])")
    p.add_argument("--top", type=int, default=50, help="rows in the report's top lists")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--ui",
        action="store_true",
        help="serve Spark's web UI while the job runs (stages as a page, /api/v1 JSON, "
        "/metrics/executors/prometheus), on loopback for a local master",
    )


_OUR_ERROR = re.compile(r"^qjm\.[\w.]+\.(\w*Error): (.*)$", re.MULTILINE)


def spark_error_message(e: BaseException) -> str:
    """The qjm error a Spark failure carries (raised in a worker), else its first line."""
    text = str(e)
    found: list[tuple[str, str]] = _OUR_ERROR.findall(text)
    if found:
        return found[-1][1].strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else type(e).__name__


def _from_spark(e: BaseException) -> bool:
    """True for an exception raised by pyspark or py4j (a Spark failure)."""
    return type(e).__module__.startswith(("pyspark", "py4j"))


def _log(args: argparse.Namespace) -> Any:
    start = time.monotonic()

    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.monotonic() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return log


def _run(args: argparse.Namespace, job: Any) -> int:
    """Start (or reuse) a session, run the job, turn Spark failures into one-line errors."""
    from pyspark import SparkContext

    from qjm.spark.report import preload
    from qjm.spark.session import build_session

    log = _log(args)
    if args.top <= 0:
        raise AnalyzeError("--top must be positive")
    # matplotlib loads while the JVM starts (the report needs it at the end).
    threading.Thread(target=preload, name="qjm-preload-matplotlib", daemon=True).start()
    # A session this process already runs (any thread) is used and left running.
    existing = SparkContext._active_spark_context
    log(f"starting Spark ({args.master}) ..." if existing is None else "using the Spark session")
    try:
        spark = build_session(
            args.master, f"qjm analyze {args.job}", progress=not args.quiet, ui=args.ui
        )
    except Exception as e:
        if _from_spark(e):
            raise AnalyzeError(
                f"Spark did not start (master {args.master!r}; is java installed?): "
                f"{spark_error_message(e)}"
            ) from None
        raise
    url = spark.sparkContext.uiWebUrl
    if url:
        log(f"Spark UI: {url} (JSON: {url}/api/v1/applications)")
    target = args.out
    staging = tempfile.mkdtemp(prefix="qjm-analyze-") if is_filesystem_uri(target) else None
    try:
        if staging is not None:
            args.out = staging  # the job writes here; then it is copied to target
        summary = job(spark, log)
        if staging is not None:
            log(f"copying the output to {target} ...")
            upload_tree(spark, Path(staging), target)
    except QjmError:
        raise
    except Exception as e:
        if _from_spark(e):
            raise AnalyzeError(spark_error_message(e)) from None
        raise
    finally:
        args.out = target
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
        if existing is None:
            spark.stop()
    out = target.rstrip("/") if staging is not None else Path(target)
    for k, v in summary.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}={b}" for a, b in sorted(v.items()))
            if len(v) > 200:
                continue
        print(f"{k}: {v}")
    print(f"report: {out}/report.html" if staging is not None else f"report: {out / 'report.html'}")
    return 2 if summary.get("consistent") is False else 0


def local_cores(master: str) -> int | None:
    """The cores a local master runs tasks on (local, local[N], local[*]); None otherwise."""
    m = re.fullmatch(r"local(?:\[(\d+|\*)(?:,\s*\d+)?\])?", master.strip())
    if m is None:
        return None
    n = m.group(1)
    return (os.cpu_count() or 1) if n == "*" else int(n or 1)


def run_namespace(args: argparse.Namespace) -> int:
    """The namespace report of an image or a Delimited dump."""
    from qjm.namenode.image.sections import read_summary_from_file
    from qjm.spark import plan as P
    from qjm.spark.analyze import namespace_job
    from qjm.spark.materialize import PartsTable
    from qjm.spark.schemas import IMAGE

    as_of_ms = None
    if args.as_of:
        try:
            as_of_ms = calendar.timegm(time.strptime(args.as_of, "%Y-%m-%d")) * 1000
        except ValueError:
            raise AnalyzeError(f"--as-of must be a date YYYY-MM-DD, got {args.as_of!r}") from None
    if args.partitions is not None and args.partitions < 1:
        raise AnalyzeError("--partitions must be positive")
    local_image: str | None = None
    if args.image and not args.image.startswith(("http://", "https://")):
        image = P.resolve_image(args.image)  # a name dir: its newest image
        if not Path(image).is_file():
            raise AnalyzeError(f"{args.image}: no such image file or name dir")
        read_summary_from_file(image)  # not an image: say so before Spark starts
        source = local_image = image
    elif args.image:
        source = args.image
    else:
        if not Path(args.delimited).exists():
            raise AnalyzeError(f"{args.delimited}: no such file or directory")
        source = args.delimited

    facts: dict[str, Any] = {}  # the image's txid and age, and where the NameNode is now

    def plan_image(cores: int) -> list[Any]:
        image = P.resolve_image(source, args.download_dir)  # fetched over HTTP when a URL
        facts.update(P.image_facts(image, time.time()))
        if source.startswith(("http://", "https://")):
            facts.update(P.namenode_position(source))
        return P.plan_image(image, args.partitions, min_partitions=cores)

    # A local image is planned (every inode message found) while the JVM starts.
    planning: concurrent.futures.Future[list[Any]] | None = None
    cores = local_cores(args.master)
    if local_image is not None and cores is not None:
        pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="qjm-plan")
        planning = pool.submit(plan_image, cores)
        pool.shutdown(wait=False)

    def job(spark: Any, log: Any) -> dict[str, Any]:
        parallelism = spark.sparkContext.defaultParallelism
        if args.image:
            log("planning the image's ranges ...")
            if planning is not None and cores == parallelism:
                parts = planning.result()
            else:
                parts = plan_image(parallelism)
            inodes = PartsTable(parts, P.read_inode_batches, IMAGE.arrow())
        else:
            parts = P.plan_delimited(args.delimited, args.delimiter, time_zone=args.time_zone)
            inodes = PartsTable(parts, P.read_text_batches, IMAGE.arrow())
        return namespace_job(
            spark,
            inodes,
            Path(args.out),
            small_file_bytes=args.small_file_bytes,
            as_of_ms=as_of_ms,
            top=args.top,
            source=source,
            log=log,
            image_facts=facts,
        )

    return _run(args, job)


def run_ops(args: argparse.Namespace) -> int:
    """The operations report of an edit log."""
    from qjm.spark import plan as P
    from qjm.spark.analyze import ops_job
    from qjm.spark.materialize import PartsTable
    from qjm.spark.schemas import EDITS

    if P.is_qjournal(args.edits):
        from qjm.client.uri import parse_qjournal_uri

        parse_qjournal_uri(args.edits)
    elif not Path(args.edits).exists():
        raise AnalyzeError(f"{args.edits}: no such edits file or directory")

    def job(spark: Any, log: Any) -> dict[str, Any]:
        log("planning the segments ...")
        parts = P.plan_edits(
            args.edits,
            in_progress=not args.finalized_only,
            from_txid=args.from_txid,
            to_txid=args.to_txid,
        )
        ops = PartsTable(parts, P.read_edits_batches, EDITS.arrow())
        return ops_job(spark, ops, Path(args.out), top=args.top, source=args.edits, log=log)

    return _run(args, job)


def run_audit(args: argparse.Namespace) -> int:
    """The journal audit of a qjournal URI."""
    from qjm.client.uri import parse_qjournal_uri
    from qjm.spark.analyze import audit_job
    from qjm.spark.schemas import AUDIT

    parse_qjournal_uri(args.journal)

    def job(spark: Any, log: Any) -> dict[str, Any]:
        df = spark.read.schema(AUDIT.ddl()).format("qjm-journal-audit").load(args.journal)
        return audit_job(spark, df, Path(args.out), source=args.journal, log=log)

    return _run(args, job)
