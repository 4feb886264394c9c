"""`lakecompact repair --wait` as an operator runs it, against the stack's Kafka and PostgreSQL: a lake landed from a
topic, verified against a source table that differs in two keys; repair signals them, and the test answers the
signal as Debezium would for one key only (its read, on the topic). repair names the key that never came back and
exits 1. (repair against real Debezium: test_postgres_to_lake and test_mariadb_to_lake.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.e2e.support.common import unique
from tests.support.cli import ROOT, lakecompact, process_env
from tests.support.debezium import INT, TEXT, Topic
from tests.support.poll import poll

pytestmark = pytest.mark.e2e


def _produce(spark, stack, lines: list[dict]) -> None:
    frame = spark.createDataFrame([(line["key"], line["payload"]) for line in lines], "key STRING, value STRING")
    frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", stack.KAFKA_BOOTSTRAP).option(
        "topic", lines[0]["topic"]).save()


def test_repair_waits_for_the_keys_it_asked_for_and_names_the_one_that_never_came_back(stack, spark, tmp_path):
    schema = unique("e2e_repair")  # the source schema, and the topic's server: this run's only
    topic = Topic(f"{schema}.{schema}.customers", [("id", INT), ("note", TEXT)], ["id"])
    table, s = f"{schema}_customers", stack.POSTGRES
    config = tmp_path / "lakecompact.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\ndatabase = "lake"\n'
        f'[source]\nkind = "kafka"\nbootstrap_servers = "{stack.KAFKA_BOOTSTRAP}"\ntopics = ["{topic.name}"]\n'
        f'[verify]\njdbc_url = "jdbc:postgresql://{s.host}:{s.port}/{s.database}"\nuser = "{s.user}"\n'
        f'password = "{s.password}"\nsettle_seconds = 0\nsignal_table = "{schema}.debezium_signal"\n'
        f'[spark.conf]\n"spark.jars" = "{",".join(stack.jdbc_jars() + stack.spark_kafka_jars())}"\n')
    _produce(spark, stack, [topic.event("c", {"id": 1, "note": "one"}, 100),
                            topic.event("c", {"id": 2, "note": "two"}, 101)])
    stack.pg_sql(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.customers (id int PRIMARY KEY, note text);\n"
                 f"INSERT INTO {schema}.customers VALUES (1, 'one'), (2, 'changed'), (9, 'never landed');\n"
                 f"CREATE TABLE {schema}.debezium_signal (id VARCHAR(64) PRIMARY KEY, type VARCHAR(32) NOT NULL, "
                 "data TEXT);")
    try:
        assert lakecompact(config, "land").returncode == 0
        assert lakecompact(config, "verify").returncode == 1  # key 2 differs, key 9 is missing in the lake
        repair = subprocess.Popen([sys.executable, "-m", "lakecompact", "--config", str(config), "repair", "--wait",
                                   "40"], cwd=ROOT, env=process_env(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        poll(lambda: stack.pg_sql(f"SELECT count(*) FROM {schema}.debezium_signal;") != [("0",)], 180,
             "repair's signal", interval=0.5, gone=lambda: repair.poll() is not None and str(repair.communicate()))
        _produce(spark, stack, [topic.event("r", {"id": 2, "note": "changed"}, 102)])  # as Debezium, for key 2 only
        out, err = repair.communicate(timeout=300)
    finally:
        stack.pg_sql(f"DROP SCHEMA {schema} CASCADE;")

    assert repair.returncode == 1, err
    assert f'repair {table}: 1 of 2 keys came back; not: ["9"]' in out.splitlines(), out
    assert "lakecompact: error: repair: 1 of 2 keys did not come back within 40s; run repair again" in err, err
    assert "Traceback" not in err
