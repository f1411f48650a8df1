"""Source rows written as Parquet by Spark tasks themselves, with pyarrow.

`qjm analyze` first copies its input (an image's inodes, an edit log's ops) to Parquet and
aggregates that copy. Through a data source, every Arrow batch a Python task yields is
turned into JVM rows and encoded again by Spark's Parquet writer, which costs more CPU than
decoding the input in Python. Here each task (one per planned part, on the executors)
writes its batches straight to one Parquet file; Spark then reads the table natively.
OUT must be a directory every executor can write (local for a local master).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class PartsTable:
    """A table read in parts: read(part) gives a part's rows as Arrow batches of schema."""

    parts: Sequence[Any]
    read: Callable[[Any], Iterator[pa.RecordBatch]]
    schema: pa.Schema


def write_part(
    path: str,
    index: int,
    part: Any,
    read: Callable[[Any], Iterator[pa.RecordBatch]],
    schema: pa.Schema,
) -> int:
    """Write one part's rows to path/part-NNNNN.parquet (whole, or not at all); its rows."""
    import pyarrow.parquet as pq

    final = os.path.join(path, f"part-{index:05d}.parquet")
    tmp = os.path.join(path, f".part-{index:05d}.{os.getpid()}.tmp")
    rows = 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for batch in read(part):
                writer.write_batch(batch)
                rows += batch.num_rows
        os.replace(tmp, final)  # a retried or speculative task writes the same file
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return rows


def write_parts(spark: Any, table: PartsTable, path: Path) -> int:
    """Write the table as Parquet under path, a Spark task per part; the rows written."""
    import pyarrow.parquet as pq

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    target = str(path.resolve())
    if not table.parts:  # no rows: one empty file still gives readers the schema
        pq.write_table(table.schema.empty_table(), os.path.join(target, "part-00000.parquet"))
        (path / "_SUCCESS").touch()
        return 0
    read, schema = table.read, table.schema  # the closure carries no parts: each task its own
    numbered = list(enumerate(table.parts))
    rdd = spark.sparkContext.parallelize(numbered, len(numbered))
    rows = sum(rdd.map(lambda ip: write_part(target, ip[0], ip[1], read, schema)).collect())
    (path / "_SUCCESS").touch()
    return int(rows)
