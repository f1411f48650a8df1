"""A SparkSession for qjm's jobs: the venv's interpreter for workers, quiet logs, sources.

Spark runs its Python workers with `python3` from PATH unless told otherwise, which is not
the interpreter that has qjm and pyarrow; build_session points every worker at
sys.executable and keeps Spark's own logging to errors.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DEFAULT_MASTER = "local[*]"

# The root stays at WARN until the session is up: Spark compares it with the shell level
# (WARN) and prints "Setting default log level" when they differ; build_session then sets
# ERROR. Loggers that warn about nothing useful are kept at ERROR from the start.
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.shutdown.name = org.apache.spark.util.ShutdownHookManager
logger.shutdown.level = error
"""


def log4j2_config() -> Path:
    """A log4j2 properties file quieting Spark's start (written once per content)."""
    digest = hashlib.sha256(LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"qjm-spark-log4j2-{digest}.properties"
    if not path.exists():
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(LOG4J2)
        os.replace(tmp, path)
    return path


def build_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "qjm",
    *,
    progress: bool = False,
    ui: bool = False,
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A SparkSession (got or created) with the qjm sources registered."""
    from pyspark.sql import SparkSession

    from qjm.spark import register

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    java_opts = f"-Dlog4j2.configurationFile={log4j2_config().as_uri()}"
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "true" if ui else "false")
        .config("spark.ui.prometheus.enabled", "true" if ui else "false")
        .config("spark.ui.showConsoleProgress", "true" if progress else "false")
    )
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
