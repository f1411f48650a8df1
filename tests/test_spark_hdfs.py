"""Spark on the cluster: Parquet to hdfs://ns1 and back, and `qjm analyze` with an hdfs:// out.

A `qjm cluster` (2 NameNodes, 3 DataNodes, manual HA) and a local Spark whose Hadoop
configuration is the cluster's hadoop-conf (the nameservice ns1, never a NameNode named).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from conftest import FIXTURES
from hadoop_clients import HACluster, client_config
from qjm.cli.main import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # a JVM starting on a loaded machine

ROWS = 1_000_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HACluster]:
    """One HA cluster with 3 DataNodes for the module."""
    c = HACluster(tmp_path_factory.mktemp("spark-hdfs") / "cluster", datanodes=3).up()
    try:
        yield c
    finally:
        c.down()


@pytest.fixture(scope="module")
def spark(cluster: HACluster) -> Iterator[Any]:
    """A local[2] session whose Hadoop configuration is the cluster's hadoop-conf."""
    from qjm.spark.session import build_session

    session = build_session("local[2]", "qjm-hdfs", conf={"spark.sql.shuffle.partitions": "2"})
    hadoop = session.sparkContext._jsc.hadoopConfiguration()
    for key, value in client_config(cluster.conf).items():  # a session another module began
        hadoop.set(key, value)
    try:
        yield session
    finally:
        session.stop()


def test_a_million_rows_of_parquet_to_hdfs_and_back(cluster: HACluster, spark: Any) -> None:
    from pyspark.sql import functions as F

    df = spark.range(ROWS).selectExpr("id", "id * 3 AS x", "CAST(id % 7 AS STRING) AS s")
    df.write.mode("overwrite").parquet("hdfs://ns1/spark/rows")
    names = [s.path.rsplit("/", 1)[-1] for s in cluster.ha_client().list_status("/spark/rows")]
    assert "_SUCCESS" in names and any(n.endswith(".parquet") for n in names), names
    back = spark.read.parquet("hdfs://ns1/spark/rows")
    got = back.agg(F.count("*"), F.sum("id"), F.sum("x"), F.countDistinct("s")).first()
    n = ROWS
    assert tuple(got) == (n, n * (n - 1) // 2, 3 * n * (n - 1) // 2, 7)


def test_analyze_writes_its_parquet_and_report_to_hdfs(cluster: HACluster, spark: Any) -> None:
    out = "hdfs://ns1/reports/ops"
    assert main(["analyze", "ops", "--edits", str(FIXTURES / "editsStored"), "--out", out]) == 0
    client = cluster.ha_client()
    listed = {s.path.rsplit("/", 1)[-1] for s in client.list_status("/reports/ops")}
    assert {"ops", "op_counts", "report.html", "summary.json"} <= listed, listed
    summary = json.loads(client.read("/reports/ops/summary.json").read())
    assert spark.read.parquet(f"{out}/ops").count() == summary["ops"] > 0
    counts = {r.opcode: r["count"] for r in spark.read.parquet(f"{out}/op_counts").collect()}
    assert counts == summary["op_counts"]
    assert b"<html" in client.read("/reports/ops/report.html").read()[:200].lower()
