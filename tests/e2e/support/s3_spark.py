"""Spark runs on the stack's S3 (`stack.py up s3 cluster`), each a process of its own with the s3a jars on its
class path, so that the suite's one SparkContext is left alone: a local session's or spark-submit's settings, the
driver's environment, and the one `RESULT {json}` line a run's script prints."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def spark_env() -> dict[str, str]:
    """The environment of a Spark driver process: loopback only; its executors get no Python."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_CONF_DIR")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_DRIVER_PYTHON=sys.executable, PYSPARK_PYTHON="/nonexistent/python")
    return env


def s3a_conf(stack) -> dict[str, str]:
    jars = ":".join(stack.s3a_jars())  # on the class path: the SDK bundle is not copied into each executor
    return {"spark.driver.extraClassPath": jars, "spark.executor.extraClassPath": jars,
            "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1", "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2", **stack.s3_spark_conf()}


def spark_submit(stack, script: Path, *args: str) -> list[str]:
    """spark-submit (client mode) on the stack's cluster with its S3 settings; the command line."""
    return [*stack.spark_submit_command(conf={"spark.sql.shuffle.partitions": "2", **stack.s3_spark_conf()}),
            str(script), *args]


def result_of(stdout: str) -> dict:
    """The JSON of the one `RESULT ` line a run printed."""
    [line] = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line.removeprefix("RESULT "))
