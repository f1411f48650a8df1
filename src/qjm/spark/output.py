"""Where `qjm analyze` puts its output: a local directory, or a Hadoop FileSystem URI.

An output URI (hdfs://ns1/reports/x) is written through the session's Hadoop configuration
(HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml, as Spark reads them): the job writes to
a local staging directory, which is then copied there with Hadoop's FileSystem, Parquet
tables, report.html and summary.json alike.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_filesystem_uri(out: str) -> bool:
    """Whether out names a Hadoop FileSystem URI (hdfs://...) rather than a local path."""
    return bool(_URI.match(out)) and not out.lower().startswith("file://")


def upload_tree(spark: Any, local: Path, uri: str) -> list[str]:
    """Copy local's entries under uri (made if missing, entries replaced) with the session's
    Hadoop FileSystem; the URIs written."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    target = jvm.org.apache.hadoop.fs.Path(uri)
    fs = target.getFileSystem(conf)
    fs.mkdirs(target)
    written = []
    for entry in sorted(local.iterdir()):
        dst = jvm.org.apache.hadoop.fs.Path(target, entry.name)
        fs.delete(dst, True)
        fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(entry.as_uri()), dst)
        written.append(str(dst.toString()))
    return written
