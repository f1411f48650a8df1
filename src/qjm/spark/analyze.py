"""The `qjm analyze` jobs: Spark aggregations written as Parquet plus an HTML report.

namespace: inodes (from an fsimage or an oiv Delimited dump) → summary, by depth, owner,
age and directory (with small files). ops: edit-log ops → counts by type, over time and
the hottest paths. Each job first writes its input rows as Parquet (a DataFrame through
Spark's writer, or a PartsTable by its own tasks with pyarrow) and aggregates from that copy,
so the input is decoded once however many tables are computed.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qjm.spark.materialize import PartsTable, write_parts
from qjm.spark.report import Plot, Report, Table, draw_plots, human_bytes, write_report

Log = Callable[[str], None]
SMALL_FILE_BYTES = 1 << 20  # files below 1 MiB count as small
DIRECTORY_DEPTH = 3  # directories summarised down to /a/b/c
TOP = 50
SUMMARY_COUNTS = (
    *("inodes", "files", "directories", "symlinks", "bytes", "space", "blocks", "small_files"),
    *("empty_files", "outside_tree", "max_depth"),
)
STRING_COLUMNS = frozenset(("owner", "age", "size_range", "opcode"))
SIZE_BUCKETS = (  # (label, upper bound in bytes, exclusive)
    ("0 B", 1),
    ("< 1 KiB", 1 << 10),
    ("< 64 KiB", 64 << 10),
    ("< 1 MiB", 1 << 20),
    ("< 16 MiB", 16 << 20),
    ("< 128 MiB", 128 << 20),
    ("< 1 GiB", 1 << 30),
    (">= 1 GiB", None),
)
AGE_BUCKETS = (  # (label, upper bound in days)
    ("< 1 day", 1),
    ("1-7 days", 7),
    ("7-30 days", 30),
    ("30-90 days", 90),
    ("90-365 days", 365),
    ("1-3 years", 3 * 365),
    (">= 3 years", None),
)


def _quiet(_: str) -> None:
    pass


def _save(df: Any, out: Path, name: str, log: Log, spark: Any = None) -> str:
    """Write a DataFrame (or a PartsTable, by its own tasks) as Parquet under out/name; the
    path written, as a file: URI (a bare path would be on the Hadoop configuration's default
    file system, an hdfs:// one under HADOOP_CONF_DIR)."""
    log(f"writing {name} ...")
    path = local_uri(out / name)
    if isinstance(df, PartsTable):
        write_parts(spark, df, out / name)
        return path
    df.write.mode("overwrite").parquet(path)
    return path


def local_uri(path: Path) -> str:
    """path as a file: URI Hadoop reads literally (its Path does not take %-escapes)."""
    return "file://" + str(path.resolve())


def _write(df: Any, out: Path, name: str, log: Log, spark: Any = None) -> Any:
    """Write a DataFrame or a PartsTable as Parquet under out/name; it read back."""
    path = _save(df, out, name, log, spark)
    return (spark or df.sparkSession).read.parquet(glob_escape(path))


def glob_escape(path: str) -> str:
    """A path with Hadoop's glob characters escaped, so Spark reads it literally."""
    return re.sub(r"([\[\]{}*?\\])", r"\\\1", path)


def write_rows(path: Path, columns: list[str], rows: list[list[Any]]) -> None:
    """A small table (collected on the driver) as Parquet, laid out as Spark writes one.

    A column is a string when its name is in STRING_COLUMNS, else a long."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    arrays = [
        pa.array([r[i] for r in rows], pa.string() if c in STRING_COLUMNS else pa.int64())
        for i, c in enumerate(columns)
    ]
    pq.write_table(pa.table(arrays, names=columns), path / "part-00000.parquet")
    (path / "_SUCCESS").touch()


def _bucket(value: Any, buckets: tuple[tuple[str, int | None], ...], when: Any) -> Any:
    """The index of the first bucket whose bound value is below (null where not when)."""
    from pyspark.sql import functions as F

    index = F.lit(len(buckets) - 1)
    for i, (_, bound) in reversed(list(enumerate(buckets[:-1]))):
        index = F.when(value < bound, i).otherwise(index)
    return F.when(when, index)


def top_rows(
    path: Path,
    columns: list[str],
    order: list[tuple[str, str]],
    top: int,
    *,
    nonzero: int | None = None,
) -> list[list[Any]]:
    """The first rows of a Parquet table by order (then by its first column), read on the
    driver; nonzero: only rows whose column of that index is not 0."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(str(path), format="parquet").to_table(columns=columns)
    if nonzero is not None:
        table = table.filter(pc.field(columns[nonzero]) != 0)
    keys = [*order, (columns[0], "ascending")]
    table = table.take(pc.sort_indices(table, sort_keys=keys)[:top])
    return [[row[c] for c in columns] for row in table.to_pylist()]


def _rows(df: Any, columns: list[str]) -> list[list[Any]]:
    return [[r[c] for c in columns] for r in df.select(*columns).collect()]


def _namespace_plots(
    depth_rows: list[list[Any]],
    owner_rows: list[list[Any]],
    age_rows: list[list[Any]],
    size_rows: list[list[Any]],
) -> list[Plot]:
    """The plots of the by-depth, owner, age and size tables (rows as written)."""
    labels = [str(r[0]) for r in depth_rows]
    top_owners = owner_rows[:20]
    small_owners = sorted((r for r in owner_rows if r[4]), key=lambda r: (-int(r[4]), str(r[0])))
    plots = [
        Plot("Bytes by depth", labels, {"bytes": [r[3] for r in depth_rows]}, ylabel="bytes"),
        Plot(
            "Files and directories by depth",
            labels,
            {"files": [r[1] for r in depth_rows], "directories": [r[2] for r in depth_rows]},
        ),
        Plot(
            "Bytes by owner",
            [str(r[0]) for r in top_owners],
            {"bytes": [r[3] for r in top_owners]},
            kind="barh",
            ylabel="bytes",
        ),
        Plot(
            "Files by age (modification time)",
            [r[1] for r in age_rows],
            {"files": [r[2] for r in age_rows]},
        ),
        Plot("Files by size", [r[1] for r in size_rows], {"files": [r[2] for r in size_rows]}),
    ]
    if small_owners:
        plots.append(
            Plot(
                "Small files by owner",
                [str(r[0]) for r in small_owners[:20]],
                {"small files": [r[4] for r in small_owners[:20]]},
                kind="barh",
            )
        )
    return [p for p in plots if has_data(p)]


def has_data(plot: Plot) -> bool:
    """Whether a plot shows anything: an empty chart (bytes of a metadata-only namespace,
    ops over time when no op has a timestamp) is left out of the report."""
    return bool(plot.labels) and any(v for values in plot.series.values() for v in values)


def cut_at_tie(rows: list[list[Any]], top: int, key: int) -> tuple[list[list[Any]], Any]:
    """The first top rows of rows (sorted by rows[i][key], descending; top + 1 given), less
    the run of rows tied with the first row left out, so a top list does not end in an
    arbitrary cut through hundreds of equals; and the tied value (None when no tie was cut).
    Where every row ties, the first top rows are kept."""
    if len(rows) <= top:
        return rows, None
    tied = rows[top][key]
    kept = [r for r in rows[:top] if r[key] != tied]
    return (kept, tied) if kept else (rows[:top], tied)


def image_figures(summary: dict[str, Any]) -> dict[str, str]:
    """The report's lines on its checkpoint: which image, how old, and how far behind the
    NameNode it was read from (a report describes the checkpoint, not the live namespace)."""
    if summary.get("image_txid") is None:
        return {}
    age = summary.get("image_age_s")
    written = f", written {duration_text(age)} before the report" if age is not None else ""
    out = {"image": f"{summary['image']} (txid {summary['image_txid']:,}{written})"}
    now = summary.get("namenode_txid")
    if now is not None:
        behind = max(0, now - summary["image_txid"])
        out["NameNode now"] = (
            f"txid {now:,}, {summary['namenode_inodes']:,} inodes: this report is "
            f"{behind:,} transactions behind it (the next checkpoint catches up)"
            if behind
            else f"txid {now:,}: the image is current"
        )
    return out


def duration_text(seconds: float) -> str:
    """A duration as a person reads it: 45 s, 12 min, 3 h 5 min, 2 days 4 h."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86_400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86_400} days {s % 86_400 // 3600} h"


def namespace_job(
    spark: Any,
    inodes: Any,  # a DataFrame of IMAGE rows or a PartsTable of them
    out: Path,
    *,
    small_file_bytes: int = SMALL_FILE_BYTES,
    as_of_ms: int | None = None,
    top: int = TOP,
    source: str = "",
    log: Log = _quiet,
    image_facts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Summarise a namespace; write Parquet tables, report.html and summary.json in out.
    image_facts (plan.image_facts, plan.namenode_position) say which checkpoint it is."""
    from pyspark.sql import functions as F

    out.mkdir(parents=True, exist_ok=True)
    as_of = as_of_ms if as_of_ms is not None else int(time.time() * 1000)
    t0 = time.monotonic()
    log("reading inodes ...")
    df = _write(inodes, out, "inodes", log, spark)
    is_file = F.col("type") == "FILE"
    small = is_file & (F.col("size") < small_file_bytes)
    slashes = F.length("path") - F.length(F.translate("path", "/", ""))  # no array per row
    depth = F.when(F.col("path") == "/", 0).otherwise(slashes)
    df = df.withColumn("depth", depth)

    def counts(*extra: Any) -> list[Any]:
        return [
            F.sum(is_file.cast("long")).alias("files"),
            F.sum((F.col("type") == "DIRECTORY").cast("long")).alias("directories"),
            F.coalesce(F.sum(F.when(is_file, F.col("size"))), F.lit(0)).alias("bytes"),
            F.sum(small.cast("long")).alias("small_files"),
            *extra,
        ]

    log("summarising ...")
    # One pass computes the totals and the by-depth, owner, age and size tables (grouping
    # sets); they are small and written from the driver.
    age_days = (F.lit(as_of) - F.col("mtime")) / 86_400_000
    df = df.withColumn("age_order", _bucket(age_days, AGE_BUCKETS, is_file)).withColumn(
        "size_order", _bucket(F.col("size"), SIZE_BUCKETS, is_file)
    )
    sets = {"total": [], "depth": ["depth"], "owner": ["owner"]}
    sets.update(age=["age_order"], size=["size_order"])
    keys = ["depth", "owner", "age_order", "size_order"]
    grouped = (
        df.groupingSets(list(sets.values()), *keys)
        .agg(
            F.grouping_id(*keys).alias("gid"),
            F.count(F.lit(1)).alias("inodes"),
            *counts(
                F.sum((F.col("type") == "SYMLINK").cast("long")).alias("symlinks"),
                F.coalesce(
                    F.sum(F.when(is_file, F.col("size") * F.col("replication"))), F.lit(0)
                ).alias("space"),
                F.coalesce(F.sum(F.when(is_file, F.col("block_count"))), F.lit(0)).alias("blocks"),
                F.sum((is_file & (F.col("size") == 0)).cast("long")).alias("empty_files"),
                F.sum(F.col("path").isNull().cast("long")).alias("outside_tree"),
                F.max("depth").alias("max_depth"),
            ),
        )
        .collect()
    )
    gids = {  # grouping_id: a bit per key, set when the key is not grouped on (first = high)
        name: sum(1 << (len(keys) - 1 - i) for i, k in enumerate(keys) if k not in cols)
        for name, cols in sets.items()
    }
    rows = {name: [r for r in grouped if r["gid"] == gid] for name, gid in gids.items()}
    (s,) = rows["total"]
    summary: dict[str, Any] = {k: int(s[k] or 0) for k in SUMMARY_COUNTS}
    summary.update(source=source, small_file_bytes=small_file_bytes, as_of_ms=as_of)
    summary.update(image_facts or {})
    count_cols = ["files", "directories", "bytes", "small_files"]
    depth_rows = sorted(
        ([r["depth"], *(r[c] for c in count_cols)] for r in rows["depth"]),
        key=lambda r: (r[0] is None, r[0] or 0),
    )
    all_owner_rows = sorted(
        ([r["owner"], *(r[c] for c in count_cols)] for r in rows["owner"]),
        key=lambda r: (-r[3], str(r[0])),
    )
    age_rows = sorted(
        [r["age_order"], AGE_BUCKETS[r["age_order"]][0], r["files"], r["bytes"]]
        for r in rows["age"]
        if r["age_order"] is not None
    )
    size_rows = sorted(
        [r["size_order"], SIZE_BUCKETS[r["size_order"]][0], r["files"], r["bytes"]]
        for r in rows["size"]
        if r["size_order"] is not None
    )
    log("writing by_depth, by_owner, by_age, by_size ...")
    write_rows(out / "by_depth", ["depth", *count_cols], depth_rows)
    write_rows(out / "by_owner", ["owner", *count_cols], all_owner_rows)
    write_rows(out / "by_age", ["age_order", "age", "files", "bytes"], age_rows)
    write_rows(out / "by_size", ["size_order", "size_range", "files", "bytes"], size_rows)
    # Drawn in a thread while Spark totals the directories.
    early_plots = _namespace_plots(depth_rows, all_owner_rows, age_rows, size_rows)
    drawing = threading.Thread(target=draw_plots, args=(early_plots,), name="qjm-draw-plots")
    drawing.start()
    deepest = DIRECTORY_DEPTH  # a file at depth d is inside directories of depth 1..d-1
    ancestors = (
        df.where(is_file & (F.col("depth") > 1))
        .withColumn(
            "k", F.explode(F.sequence(F.lit(1), F.least(F.col("depth") - 1, F.lit(deepest))))
        )
        # /a/b/c/f at k = 2: the text before its third slash, /a/b
        .withColumn("directory", F.expr("substring_index(path, '/', k + 1)"))
    )
    _save(
        ancestors.groupBy("directory", F.col("k").alias("depth")).agg(
            F.count(F.lit(1)).alias("files"),
            F.sum("size").alias("bytes"),
            F.sum(small.cast("long")).alias("small_files"),
        ),  # unsorted: a global sort costs a job; the report takes its top rows
        out,
        "by_directory",
        log,
    )

    log("writing the report ...")
    drawing.join()
    owner_rows = all_owner_rows[:top]
    age_rows = [r[1:] for r in age_rows]
    size_rows = [r[1:] for r in size_rows]
    dir_columns = ["directory", "files", "bytes", "small_files"]
    dir_rows = top_rows(out / "by_directory", dir_columns, [("bytes", "descending")], top)
    small_rows = [
        [r[0], r[3], r[1], r[2]]
        for r in top_rows(
            out / "by_directory", dir_columns, [("small_files", "descending")], top, nonzero=3
        )
    ]
    report = Report(
        f"Namespace report: {source}" if source else "Namespace report",
        figures={
            "inodes": summary["inodes"],
            "files": summary["files"],
            "directories": summary["directories"],
            "symlinks": summary["symlinks"],
            "bytes": f"{summary['bytes']:,} ({human_bytes(summary['bytes'])})",
            "bytes x replication": f"{summary['space']:,} ({human_bytes(summary['space'])})",
            "blocks": summary["blocks"],
            f"small files (< {human_bytes(small_file_bytes)})": summary["small_files"],
            "empty files": summary["empty_files"],
            "deepest path": summary["max_depth"],
            "ages as of": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(as_of / 1000)),
            **image_figures(summary),
        },
    )
    report.parts += early_plots
    if small_rows:
        report.parts.append(
            Plot(
                "Directories with the most small files",
                [r[0] for r in small_rows[:20]],
                {"small files": [r[1] for r in small_rows[:20]]},
                kind="barh",
            )
        )
    report.parts += [
        Table("By depth", ["depth", "files", "directories", "bytes", "small files"], depth_rows),
        Table("By owner", ["owner", "files", "directories", "bytes", "small files"], owner_rows),
        Table("By age", ["age", "files", "bytes"], age_rows),
        Table("By size", ["size", "files", "bytes"], size_rows),
        Table(
            f"Largest directories (to depth {DIRECTORY_DEPTH})",
            ["directory", "files", "bytes", "small files"],
            dir_rows,
        ),
        Table(
            "Small files by directory", ["directory", "small files", "files", "bytes"], small_rows
        ),
    ]
    write_report(report, out / "report.html")
    summary["seconds"] = round(time.monotonic() - t0, 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _time_unit(span_ms: int) -> str:
    if span_ms <= 2 * 3_600_000:
        return "minute"
    if span_ms <= 7 * 86_400_000:
        return "hour"
    return "day"


def ops_job(
    spark: Any,
    edits: Any,  # a DataFrame of EDITS rows or a PartsTable of them
    out: Path,
    *,
    top: int = TOP,
    source: str = "",
    log: Log = _quiet,
) -> dict[str, Any]:
    """Count ops by type, over time and by path; write Parquet, report.html, summary.json."""
    from pyspark.sql import functions as F

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log("reading ops ...")
    df = _write(edits, out, "ops", log, spark)
    s = df.agg(
        F.count(F.lit(1)).alias("ops"),
        F.min("txid").alias("first_txid"),
        F.max("txid").alias("last_txid"),
        F.countDistinct("txid").alias("distinct_txids"),
        F.min("timestamp").alias("first_timestamp"),
        F.max("timestamp").alias("last_timestamp"),
        F.sum(F.col("timestamp").isNull().cast("long")).alias("without_timestamp"),
        F.countDistinct("segment_start").alias("segments"),
    ).first()
    summary: dict[str, Any] = s.asDict()
    first, last = summary["first_txid"], summary["last_txid"]
    summary["missing_txids"] = (last - first + 1 - summary["distinct_txids"]) if first else 0
    summary["source"] = source
    count_rows = sorted(
        ([r["opcode"], r["count"]] for r in df.groupBy("opcode").count().collect()),
        key=lambda r: (-r[1], r[0]),
    )
    log("writing op_counts ...")
    write_rows(out / "op_counts", ["opcode", "count"], count_rows)
    summary["op_counts"] = {r[0]: r[1] for r in count_rows}
    unit = "hour"
    if summary["first_timestamp"] is not None:
        unit = _time_unit(summary["last_timestamp"] - summary["first_timestamp"])
    timed = df.where(F.col("timestamp").isNotNull()).withColumn(
        "time", F.date_trunc(unit, F.timestamp_millis("timestamp"))
    )
    over_time = _write(
        timed.groupBy("time", "opcode").count().orderBy("time", "opcode"), out, "ops_over_time", log
    )
    hottest = _write(
        df.where(F.col("path").isNotNull())
        .groupBy("path")
        .agg(
            F.count(F.lit(1)).alias("ops"),
            F.concat_ws(" ", F.sort_array(F.collect_set("opcode"))).alias("opcodes"),
        ),  # unsorted: a global sort of every path costs a job; the report takes the top
        out,
        "hottest_paths",
        log,
    )

    log("writing the report ...")
    hot_rows = _rows(
        hottest.orderBy(F.desc("ops"), "path").limit(top + 1), ["path", "ops", "opcodes"]
    )
    hot_rows, tied = cut_at_tie(hot_rows, top, 1)
    hot_note = "Paths named by the most ops (an op's path, or its source for a rename)."
    if tied is not None:
        more = hottest.where(F.col("ops") == tied).count() - sum(r[1] == tied for r in hot_rows)
        hot_note += f" And {more:,} more paths with {tied:,} ops each."
    time_rows = _rows(over_time, ["time", "opcode", "count"])
    timed_totals: dict[str, int] = {}
    for _, op, n in time_rows:
        timed_totals[op] = timed_totals.get(op, 0) + n
    top_ops = sorted(timed_totals, key=lambda op: (-timed_totals[op], op))[:8]
    times = sorted({r[0] for r in time_rows})
    series: dict[str, list[float]] = {op: [0.0] * len(times) for op in top_ops}
    other = [0.0] * len(times)
    index = {t: i for i, t in enumerate(times)}
    for t, op, n in time_rows:
        if op in series:
            series[op][index[t]] += n
        else:
            other[index[t]] += n
    if any(other):
        series["other"] = other
    fmt = {"minute": "%m-%d %H:%M", "hour": "%m-%d %H:00", "day": "%Y-%m-%d"}[unit]
    report = Report(
        f"Operations report: {source}" if source else "Operations report",
        figures={
            "ops": summary["ops"],
            "txids": f"{first}-{last}" if first else "none",
            "missing txids": summary["missing_txids"],
            "segments": summary["segments"],
            "op types": len(count_rows),
            "ops without a timestamp": summary["without_timestamp"],
        },
    )
    plots = [
        Plot(
            "Ops by type",
            [r[0] for r in count_rows],
            {"ops": [r[1] for r in count_rows]},
            kind="barh",
        ),
        Plot(
            f"Ops over time (per {unit}, ops with a timestamp)",
            [t.strftime(fmt) for t in times],
            series,
            stacked=True,
        ),
    ]
    report.parts += [
        *(p for p in plots if has_data(p)),
        Table("Ops by type", ["opcode", "count"], count_rows),
        Table("Hottest paths", ["path", "ops", "op types"], hot_rows, note=hot_note),
    ]
    write_report(report, out / "report.html")
    summary["seconds"] = round(time.monotonic() - t0, 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def audit_job(
    spark: Any, audit: Any, out: Path, *, source: str = "", log: Log = _quiet
) -> dict[str, Any]:
    """Compare every node's copy of each finalized segment; Parquet, report and summary."""
    from pyspark.sql import functions as F

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log("reading every copy of every finalized segment ...")
    df = _write(audit, out, "copies", log)
    statuses = {r["status"]: r["count"] for r in df.groupBy("status").count().collect()}
    segments = df.where(F.col("segment_start").isNotNull()).select("segment_start").distinct()
    problems = _rows(
        df.where(F.col("status") != "ok").orderBy("segment_start", "node"),
        ["segment_start", "segment_end", "node", "status", "first_difference_txid", "detail"],
    )
    summary: dict[str, Any] = {
        "segments": segments.count(),
        "copies": int(sum(statuses.values())),
        "statuses": statuses,
        "consistent": not problems,
        "source": source,
    }
    by_node = _rows(
        df.groupBy("node").pivot("status").count().na.fill(0).orderBy("node"),
        ["node", *sorted(statuses)],
    )
    log("writing the report ...")
    report = Report(
        f"Journal audit: {source}" if source else "Journal audit",
        figures={
            "verdict": "all nodes consistent" if not problems else f"{len(problems)} problems",
            "finalized segments": summary["segments"],
            "copies compared": summary["copies"],
            **{f"copies {k}": v for k, v in sorted(statuses.items())},
        },
    )
    if by_node:
        report.parts.append(
            Plot(
                "Copies by node and status",
                [str(r[0]) for r in by_node],
                {k: [r[i + 1] for r in by_node] for i, k in enumerate(sorted(statuses))},
                stacked=True,
            )
        )
    report.parts += [
        Table(
            "Copies that are not ok",
            ["segment start", "segment end", "node", "status", "first differing txid", "detail"],
            problems,
            note="A copy is ok when it holds the records most copies hold, txid for txid.",
        ),
        Table("By node", ["node", *sorted(statuses)], by_node),
    ]
    write_report(report, out / "report.html")
    summary["seconds"] = round(time.monotonic() - t0, 3)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary
