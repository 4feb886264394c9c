"""The Spark settings lakecompact gives a session: small-machine defaults on a local master only, and the user's
[spark.conf] over them."""

from __future__ import annotations

import pytest

from lakecompact import config as config_module
from lakecompact import spark as spark_module
from tests.support.configs import session_conf_of


def _conf(master: str, spark_conf: dict | None = None) -> dict[str, str]:
    return session_conf_of({"master": master, "conf": spark_conf or {}})


@pytest.fixture(autouse=True)
def launched_by_lakecompact(tmp_path, monkeypatch):
    """A JVM that lakecompact launches itself, on a machine without a spark-defaults.conf of its own."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)  # a session of another launcher keeps its own settings
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-spark-conf"))  # not this machine's spark-defaults.conf


def test_a_local_master_gets_small_memory_pages_for_its_small_tasks():
    assert _conf("local[2]")["spark.buffer.pageSize"] == "2m"


def test_the_users_page_size_wins_and_a_cluster_keeps_sparks_own():
    assert _conf("local[2]", {"spark.buffer.pageSize": "16m"})["spark.buffer.pageSize"] == "16m"
    assert "spark.buffer.pageSize" not in _conf("yarn")


def test_the_jars_of_spark_defaults_conf_come_before_the_stacks(tmp_path, monkeypatch):
    """spark-submit takes spark-defaults.conf's `spark.jars` only when a launch gives none; the Kafka source gives
    the stack's jars on a machine that has them."""
    stack = tmp_path / "stack-jars"
    for folder in ("spark-kafka", "spark-avro"):
        (stack / folder).mkdir(parents=True)
        (stack / folder / f"{folder}.jar").write_bytes(b"")
    monkeypatch.setattr(spark_module, "STACK_JARS", stack)
    config = config_module.from_dict({"warehouse": "/tmp/w",
                                      "source": {"kind": "kafka", "bootstrap_servers": "k:9092", "topics": ["t"]}})
    stacks = [str(stack / "spark-kafka" / "spark-kafka.jar"), str(stack / "spark-avro" / "spark-avro.jar")]
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert spark_module.session_conf(config)["spark.jars"].split(",") == stacks
    (tmp_path / "spark-defaults.conf").write_text("spark.jars /opt/site/postgresql.jar,/opt/site/udfs.jar\n")
    assert spark_module.session_conf(config)["spark.jars"].split(",") == [
        "/opt/site/postgresql.jar", "/opt/site/udfs.jar", *stacks]
