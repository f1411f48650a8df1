"""`qjm analyze`: Spark jobs over images and edit logs, written as Parquet plus a report.

  qjm analyze namespace --image fsimage_N --out OUT     (or --delimited an oiv dump)
  qjm analyze ops --edits DIR|FILE|qjournal://... --out OUT
  qjm analyze audit --journal qjournal://... --out OUT  (exit 2 when copies differ)

Each writes Parquet tables under OUT, OUT/report.html (plots and tables) and
OUT/summary.json. --master takes any Spark master URL (default local[*]).
"""

from __future__ import annotations

import argparse
import calendar
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

from qjm.errors import QjmError


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
    p.add_argument("--out", required=True, help="output directory")
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
    try:
        summary = job(spark, log)
    except QjmError:
        raise
    except Exception as e:
        if _from_spark(e):
            raise AnalyzeError(spark_error_message(e)) from None
        raise
    finally:
        if existing is None:
            spark.stop()
    out = Path(args.out)
    for k, v in summary.items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}={b}" for a, b in sorted(v.items()))
            if len(v) > 200:
                continue
        print(f"{k}: {v}")
    print(f"report: {out / 'report.html'}")
    return 2 if summary.get("consistent") is False else 0


def run_namespace(args: argparse.Namespace) -> int:
    """The namespace report of an image or a Delimited dump."""
    from qjm.namenode.image.sections import read_summary_from_file
    from qjm.spark.analyze import namespace_job
    from qjm.spark.plan import resolve_image
    from qjm.spark.schemas import IMAGE

    as_of_ms = None
    if args.as_of:
        try:
            as_of_ms = calendar.timegm(time.strptime(args.as_of, "%Y-%m-%d")) * 1000
        except ValueError:
            raise AnalyzeError(f"--as-of must be a date YYYY-MM-DD, got {args.as_of!r}") from None
    if args.image and not args.image.startswith(("http://", "https://")):
        image = resolve_image(args.image)  # a name dir: its newest image
        if not Path(image).is_file():
            raise AnalyzeError(f"{args.image}: no such image file or name dir")
        read_summary_from_file(image)  # not an image: say so before Spark starts
        source = image
    elif args.image:
        source = args.image
    else:
        if not Path(args.delimited).exists():
            raise AnalyzeError(f"{args.delimited}: no such file or directory")
        source = args.delimited

    def job(spark: Any, log: Any) -> dict[str, Any]:
        reader = spark.read.schema(IMAGE.ddl())  # given: Spark need not ask the source
        if args.image:
            if args.partitions:
                reader = reader.option("numPartitions", args.partitions)
            else:  # at least a range per core
                reader = reader.option("minPartitions", spark.sparkContext.defaultParallelism)
            if args.download_dir:
                reader = reader.option("downloadDir", args.download_dir)
            df = reader.format("qjm-image").load(source)
        else:
            reader = reader.option("delimiter", args.delimiter)
            if args.time_zone:
                reader = reader.option("timeZone", args.time_zone)
            df = reader.format("qjm-oiv-delimited").load(args.delimited)
        return namespace_job(
            spark,
            df,
            Path(args.out),
            small_file_bytes=args.small_file_bytes,
            as_of_ms=as_of_ms,
            top=args.top,
            source=source,
            log=log,
        )

    return _run(args, job)


def run_ops(args: argparse.Namespace) -> int:
    """The operations report of an edit log."""
    from qjm.spark.analyze import ops_job
    from qjm.spark.plan import is_qjournal
    from qjm.spark.schemas import EDITS

    if is_qjournal(args.edits):
        from qjm.client.uri import parse_qjournal_uri

        parse_qjournal_uri(args.edits)
    elif not Path(args.edits).exists():
        raise AnalyzeError(f"{args.edits}: no such edits file or directory")

    def job(spark: Any, log: Any) -> dict[str, Any]:
        reader = spark.read.schema(EDITS.ddl()).format("qjm-edits")
        reader = reader.option("fromTxid", args.from_txid)
        if args.to_txid is not None:
            reader = reader.option("toTxid", args.to_txid)
        if args.finalized_only:
            reader = reader.option("inProgress", "false")
        df = reader.load(args.edits)
        return ops_job(spark, df, Path(args.out), top=args.top, source=args.edits, log=log)

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
