"""`land --table T` on a real Kafka broker: only the topics of T land; every other topic keeps its position and
lands, whole, with the next `land`."""

from __future__ import annotations

import uuid

import pytest

from lakecompact import config as config_module
from lakecompact.errors import LakecompactError
from lakecompact.landing.land import dry_run, land
from tests.support.databases import database_name
from tests.support.debezium import INT, TEXT, Topic

pytestmark = pytest.mark.e2e


def test_land_one_table_leaves_the_other_topics_for_the_next_land(stack, spark, tmp_path):
    server = f"one{uuid.uuid4().hex[:8]}"  # Kafka's data outlives the stack's restarts: topics of this run only
    topics = {name: Topic(f"{server}.public.{name}", [("id", INT), ("note", TEXT)], ["id"]) for name in ("a", "b")}

    def produce(name: str, first: int, count: int) -> None:
        topic = topics[name]
        lines = [topic.event("c", {"id": i, "note": f"{name}{i}"}, 100 + i) for i in range(first, first + count)]
        frame = spark.createDataFrame([(line["key"], line["payload"]) for line in lines], "key STRING, value STRING")
        frame.write.format("kafka").option("kafka.bootstrap.servers", stack.KAFKA_BOOTSTRAP).option(
            "topic", topic.name).save()

    produce("a", 1, 3)
    produce("b", 1, 4)
    database = database_name()
    config = config_module.from_dict({
        "warehouse": str(tmp_path / "warehouse"),
        "database": database,
        "source": {"kind": "kafka", "bootstrap_servers": stack.KAFKA_BOOTSTRAP,
                   "topic_pattern": f"{server}\\..*"},
        "defaults": {"buckets": 2},
    })

    assert [(r["table"], r["events"]) for r in dry_run(spark, config, "public_a")] == [("public_a", 3)]
    assert land(spark, config, table="public_a").rows_out == {"public_a": 3}
    produce("a", 4, 2)
    assert land(spark, config, table="public_a").rows_out == {"public_a": 2}  # b waited, untouched
    assert land(spark, config).rows_out == {"public_b": 4}  # b from its beginning, a has nothing new
    assert land(spark, config).rows_out == {}

    counts = spark.sql(
        f"SELECT 'a' AS t, count(*) AS n FROM {database}.public_a UNION ALL SELECT 'b', count(*) FROM {database}.public_b"
    ).collect()
    assert {r.t: r.n for r in counts} == {"a": 5, "b": 4}
    with pytest.raises(LakecompactError, match="no topic of the source lands in that table"):
        land(spark, config, table="public_c")
