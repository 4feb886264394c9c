"""A Kafka batch whose topic changed schema after more messages than its first lines sample (a column added
mid-batch, JSON with the schema embedded, a real broker) lands in one pass: each partition's last messages are
sampled too, so the land expects both versions and evolves the table through them in order (docs/design.md
"Landing protocol")."""

from __future__ import annotations

import uuid

import pytest

from lakecompact import config as config_module
from lakecompact.lake.catalog import Catalog
from lakecompact.landing import decode
from lakecompact.landing.land import land
from tests.support.databases import database_name
from tests.support.debezium import INT, TEXT, Topic

pytestmark = pytest.mark.e2e

FIRST, SECOND = decode.SAMPLE_LINES + 100, 20  # events of each version: the second is past the first lines


def test_a_schema_change_past_the_first_lines_lands_in_one_pass(stack, spark, tmp_path, careful_calls):
    topic = Topic(f"ver{uuid.uuid4().hex[:8]}.public.items", [("id", INT), ("name", TEXT)], ["id"])
    lines = [topic.event("c", {"id": i, "name": f"n{i}"}, 100 + i) for i in range(FIRST)]
    topic.columns.append(("note", TEXT))
    lines += [topic.event("u", {"id": i, "name": f"m{i}", "note": f"x{i}"}, 10_000 + i) for i in range(SECOND)]
    frame = spark.createDataFrame([(line["key"], line["payload"]) for line in lines], "key STRING, value STRING")
    frame.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", stack.KAFKA_BOOTSTRAP) \
        .option("topic", topic.name).save()
    database = database_name()
    config = config_module.from_dict({
        "warehouse": str(tmp_path / "warehouse"),
        "database": database,
        "source": {"kind": "kafka", "bootstrap_servers": stack.KAFKA_BOOTSTRAP, "topics": [topic.name]},
        "defaults": {"buckets": 2},
    })

    report = land(spark, config)

    assert report.rows_out == {"public_items": FIRST + SECOND} and report.quarantined == {}
    assert careful_calls == []
    schema = Catalog(spark, config).schema("public_items")
    assert [f.name for f in schema.fields] == ["id", "name", "note"] and schema.version == 2
    rows = spark.sql(f"SELECT id, name, note FROM {database}.public_items").collect()
    assert sorted((r.id, r.name, r.note) for r in rows) == sorted(
        [(i, f"m{i}", f"x{i}") for i in range(SECOND)] + [(i, f"n{i}", None) for i in range(SECOND, FIRST)])
    spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
