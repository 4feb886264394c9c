"""repair's watch (docs/verify.md "Did Debezium act?"): which keys it waits for came back among a table's events,
decoded as landing decodes them and written as verify writes a key; and the poll over a topic that reads only what
is new, until the keys came back or the time ran out (the topic an in-process stand-in for Kafka)."""

from __future__ import annotations

import pytest

from lakecompact import config as config_module
from lakecompact.lake.connect import Field
from lakecompact.lake.model import TableSchema
from lakecompact.landing import decode, kafka
from lakecompact.verify import watch
from tests.support.debezium import INT, TEXT, Topic, decimal, decimal_wire

TOPIC = "srv.public.customers"
SCHEMA = TableSchema("public_customers", TOPIC, (Field("id", INT), Field("note", TEXT)), ("id",))


def _config(tmp_path):
    return config_module.from_dict({"warehouse": str(tmp_path / "warehouse"), "source": {
        "kind": "kafka", "bootstrap_servers": "127.0.0.1:9", "topics": [TOPIC]}})


def _raw(spark, lines: list[dict]):
    """kcat -J lines as kafka.read gives them."""
    return spark.createDataFrame(
        [(line["topic"], line["partition"], line["offset"], line["key"], line["payload"], None, None, None,
          line["payload"].encode() if line["payload"] else None) for line in lines], kafka.RAW_SCHEMA)


def test_a_key_asked_again_is_back_on_its_read_and_a_key_gone_on_its_delete(spark):
    events = spark.createDataFrame([(7, "r"), (8, "u"), (9, "c"), (4, "d"), (5, "r")], "id INT, __op STRING")
    assert watch.keys_back(spark, events, ["id"], ['["7"]', '["8"]', '["9"]', '["6"]'], ['["4"]', '["5"]']) == \
        {'["7"]', '["4"]'}


def test_a_key_is_matched_as_verify_writes_it_whatever_its_columns_types(spark):
    events = spark.createDataFrame([("eu", "12.50", "r"), ("us", "3", "r")], "region STRING, amount STRING, __op STRING"
                                   ).selectExpr("region", "CAST(amount AS DECIMAL(10,2)) AS amount", "__op")
    # verify writes a decimal without its trailing zeros
    assert watch.keys_back(spark, events, ["region", "amount"], ['["eu","12.5"]', '["us","3.00"]'], []) == \
        {'["eu","12.5"]'}


def test_a_topics_messages_are_decoded_as_land_decodes_them_with_or_without_a_schema(spark, tmp_path):
    amount = decimal(10, 2)
    schema = TableSchema("public_prices", "srv.public.prices", (Field("amount", amount), Field("note", TEXT)),
                         ("amount",))
    with_schema = Topic("srv.public.prices", [("amount", amount), ("note", TEXT)], ["amount"])
    without = Topic("srv.public.prices", [("amount", amount), ("note", TEXT)], ["amount"], with_schema=False,
                    next_offset=2)
    lines = [with_schema.event("r", {"amount": decimal_wire("12.50", 2), "note": "a"}, 100),
             with_schema.event("u", {"amount": decimal_wire("3", 2), "note": "b"}, 101),
             without.event("d", {"amount": decimal_wire("7.10", 2), "note": "c"}, 102),
             without.tombstone({"amount": decimal_wire("7.10", 2)})]
    messages = decode.split_message(_raw(spark, lines))
    rows = watch.table_events(_config(tmp_path), messages, schema, ["srv.public.prices"])
    assert sorted((str(r["amount"]), r["__op"]) for r in rows.collect()) == [("12.50", "r"), ("3.00", "u"),
                                                                             ("7.10", "d")]
    assert watch.keys_back(spark, rows, ["amount"], ['["12.5"]', '["3"]'], ['["7.1"]']) == {'["12.5"]', '["7.1"]'}


class StandIn:
    """One topic of one partition, as kafka.partition_bounds and kafka.read give it; the ranges read recorded."""

    def __init__(self, spark, lines: list[dict]):
        self.spark, self.lines, self.reads = spark, lines, []

    def bounds(self, spark, source):
        return [kafka.PartitionBounds(TOPIC, 0, 0, len(self.lines))]

    def read(self, spark, source, ranges):
        self.reads.append(ranges)
        part = ranges[f"{TOPIC}:0"]
        return _raw(self.spark, self.lines[part["start"]:part["end"]])


def test_the_watch_reads_what_is_new_and_names_each_key_that_did_not_come_back(spark, tmp_path, monkeypatch, capsys):
    topic = Topic(TOPIC, [("id", INT), ("note", TEXT)], ["id"])
    # before repair signalled: a read of key 1 that proves nothing
    stand_in = StandIn(spark, [topic.event("c", {"id": 9, "note": "x"}, 100), topic.event("r", {"id": 1}, 101)])
    monkeypatch.setattr(kafka, "partition_bounds", stand_in.bounds)
    monkeypatch.setattr(kafka, "read", stand_in.read)
    monkeypatch.setattr(watch, "POLL_SECONDS", 0.2)
    config = _config(tmp_path)
    since = watch.positions(spark, config, ["public_customers"])
    assert since == {f"{TOPIC}:0": 2}
    stand_in.lines += [topic.event("r", {"id": 1, "note": "again"}, 102), topic.event("u", {"id": 9, "note": "y"}, 103),
                       topic.event("d", {"id": 4, "note": "gone"}, 104)]
    wanted = [watch.Wanted(SCHEMA, ('["1"]', '["9"]'), ('["4"]', '["5"]'))]
    with pytest.raises(watch.KeysNotBack) as raised:
        watch.watch(spark, config, since, wanted, 2)
    assert raised.value.exit_code == 1
    assert str(raised.value).startswith("repair: 2 of 4 keys did not come back within 2s; run repair again")
    assert stand_in.reads == [{f"{TOPIC}:0": {"start": 2, "end": 5}}]  # then nothing new: nothing read
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("repair: waiting up to 2s for the 4 keys to come back on the topics (2 as the deletes of the "
                        "printed statements: run them meanwhile)")
    assert lines[-1] == 'repair public_customers: 2 of 4 keys came back; not: ["9"], ["5"] (delete)'


def test_the_watch_stops_once_every_key_came_back(spark, tmp_path, monkeypatch, capsys):
    topic = Topic(TOPIC, [("id", INT), ("note", TEXT)], ["id"])
    stand_in = StandIn(spark, [topic.event("r", {"id": 1, "note": "again"}, 102)])
    monkeypatch.setattr(kafka, "partition_bounds", stand_in.bounds)
    monkeypatch.setattr(kafka, "read", stand_in.read)
    watch.watch(spark, _config(tmp_path), {f"{TOPIC}:0": 0}, [watch.Wanted(SCHEMA, ('["1"]',), ())], 600)
    assert capsys.readouterr().out.splitlines()[-1] == "repair public_customers: 1 of 1 keys came back"


def test_without_a_kafka_source_the_watch_says_it_cannot_check(spark, tmp_path, capsys):
    files = config_module.from_dict({"warehouse": str(tmp_path), "source": {"kind": "files", "paths": ["x"]}})
    assert watch.positions(spark, files, ["public_customers"]) is None
    watch.watch(spark, files, None, [watch.Wanted(SCHEMA, ('["1"]',), ())], 300)
    assert capsys.readouterr().out.splitlines() == [
        "repair: the source is files, not Kafka: cannot check that Debezium sent the keys again"]
