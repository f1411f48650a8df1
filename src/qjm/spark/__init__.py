"""qjm on Spark: Python data sources for edit logs, fsimages and oiv Delimited dumps.

spark = qjm.spark.session.build_session("local[*]")   # registers the sources
# or, with a session of your own:
qjm.spark.register(spark)
spark.read.format("qjm-image").load(path)
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register qjm-edits, qjm-image and qjm-oiv-delimited with a SparkSession."""
    from qjm.spark.sources import SOURCES

    for cls in SOURCES:
        spark.dataSource.register(cls)


__all__ = ["register"]
