"""Avro values (Confluent's wire format) whose first lines show one schema id land in one pass, with the same rows,
quarantine and counts as the careful way; a topic with an event in another form (another schema id, no Avro at all)
lands whole the careful way (docs/design.md "Landing protocol").

The registry is tests/support/registry_server.py; Kafka is an in-process stand-in that gives the records as Spark's
Kafka source does (kafka.raw_events), so the land reads real bytes and writes real parquet.
"""

from __future__ import annotations

import pytest

from lakecompact.lake.catalog import Catalog
from lakecompact.landing import decode, kafka, land
from lakecompact.landing.land import Landing
from tests.support import avro as avro_support
from tests.support.databases import database_name
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import Lake, quarantined
from tests.support.registry_server import RegistryServer

TOPIC = "pg.public.items"
TABLE = "public_items"
V1 = [("id", INT), ("name", TEXT)]
V2 = [*V1, ("note", TEXT)]  # the table gained a column
Records = list[tuple[bytes | None, bytes | None]]


class KafkaStandIn:
    """One partition of TOPIC, its records (key, value) as Spark's Kafka source gives them."""

    def __init__(self, spark, records: Records):
        self.spark, self.records = spark, records

    def bounds(self, spark, source) -> list[kafka.PartitionBounds]:
        return [kafka.PartitionBounds(TOPIC, 0, 0, len(self.records))]

    def read(self, spark, source, ranges):
        bounds = ranges[f"{TOPIC}:0"]
        rows = [(TOPIC, 0, offset, *self.records[offset]) for offset in range(bounds["start"], bounds["end"])]
        schema = "topic STRING, partition INT, offset BIGINT, key BINARY, value BINARY"
        return kafka.raw_events(self.spark.createDataFrame(rows, schema))


@pytest.fixture
def registry():
    with RegistryServer() as server:
        yield server


def _avro(registry: RegistryServer, topic: Topic, lines: list[dict]) -> Records:
    """The topic's lines as AvroConverter writes them, their schemas registered as it registers them."""
    value = registry.register(f"{TOPIC}-value", avro_support.avro_type(topic.value_schema(), set()))
    key = registry.register(f"{TOPIC}-key", avro_support.avro_type(topic.key_schema(), set()))
    return avro_support.converted(topic.value_schema(), topic.key_schema(), lines, value, key)


def _kafka_lake(spark, folder, registry: RegistryServer, stand_in: KafkaStandIn, monkeypatch, **settings) -> Lake:
    """A lake in `folder` whose Kafka source is the stand-in (records added to it come in the next land)."""
    monkeypatch.setattr(kafka, "partition_bounds", stand_in.bounds)
    monkeypatch.setattr(kafka, "read", stand_in.read)
    return Lake(spark, folder, database_name(),
                source={"kind": "kafka", "bootstrap_servers": "127.0.0.1:9", "topics": [TOPIC]},
                registry={"url": registry.url}, **settings)


def _landed(spark, tmp_path, registry: RegistryServer, records: Records, monkeypatch, name: str):
    """A lake of its own whose Kafka source holds `records`, landed once: (the lake, its report)."""
    (tmp_path / name).mkdir()
    lake = _kafka_lake(spark, tmp_path / name, registry, KafkaStandIn(spark, records), monkeypatch)
    return lake, lake.land()


def _careful_too(spark, tmp_path, registry, records: Records, monkeypatch):
    """The same records landed by a lake that takes no one pass: every topic the careful way."""
    with monkeypatch.context() as careful_only:
        careful_only.setattr(Landing, "_one_pass_plan", lambda *args: None)
        return _landed(spark, tmp_path, registry, records, careful_only, "careful")


def _counts(report) -> tuple:
    return report.events_in, report.rows_out, report.quarantined, report.skipped


def _increments(lake: Lake) -> list[dict]:
    """Every row the batch wrote to the table's increments, but when it landed, by Kafka offset."""
    lake.spark.catalog.refreshTable(f"`{lake.database}`.`{TABLE}_increments`")
    rows = lake.rows(f"SELECT * FROM `{lake.database}`.`{TABLE}_increments`")
    return sorted(({k: v for k, v in row.items() if k not in ("__landed_at", "__hour")} for row in rows),
                  key=lambda row: row["__kafka_offset"])


def _quarantined(lake: Lake) -> list[dict]:
    return sorted(quarantined(lake, TABLE), key=lambda row: row["__kafka_offset"])


def _same_as_careful(lake: Lake, report, careful: Lake, careful_report) -> None:
    assert _counts(report) == _counts(careful_report)
    assert _increments(lake) == _increments(careful)
    assert _quarantined(lake) == _quarantined(careful)


def test_an_avro_topic_of_one_schema_id_lands_in_one_pass_as_the_careful_way_lands_it(
        spark, tmp_path, registry, monkeypatch, careful_calls):
    items = Topic(TOPIC, V1, ["id"])
    records = _avro(registry, items, [
        items.event("c", {"id": 1, "name": "a"}, 100), items.event("c", {"id": 2, "name": "b"}, 110),
        items.event("u", {"id": 1, "name": "a2"}, 120), items.event("d", {"id": 2, "name": "b"}, 130),
        items.tombstone({"id": 2}), items.event("x", {"id": 4, "name": "d"}, 140),
        items.event("c", {"id": 3, "name": "c"}, 150),
    ])
    lake, report = _landed(spark, tmp_path, registry, records, monkeypatch, "one-pass")
    assert careful_calls == []
    assert _counts(report) == (7, {TABLE: 5}, {TABLE: 1}, 1)  # in = out + quarantined + skipped (the tombstone)
    assert lake.view(TABLE, order="id") == [{"id": 1, "name": "a2"}, {"id": 3, "name": "c"}]
    [rejected] = _quarantined(lake)
    assert (rejected["__reason"], rejected["__kafka_offset"]) == ("unknown op 'x'", 5)
    assert bytes(rejected["__value_bytes"]) == records[5][1]  # as it came, so that requeue can land it again
    careful, careful_report = _careful_too(spark, tmp_path, registry, records, monkeypatch)
    assert careful_calls == ["careful"]
    _same_as_careful(lake, report, careful, careful_report)


@pytest.mark.parametrize("last_sampled", [False, True], ids=["the first lines sampled", "the last too"])
def test_a_schema_id_changed_mid_batch_lands_the_topic_whole_the_careful_way(
        spark, tmp_path, registry, monkeypatch, careful_calls, last_sampled):
    if not last_sampled:  # the lines sampled show the first id only: the one-pass scan finds the second
        monkeypatch.setattr(land, "LAST_SAMPLED", 0)
    v1, v2 = Topic(TOPIC, V1, ["id"]), Topic(TOPIC, V2, ["id"])
    n = decode.SAMPLE_LINES
    records = _avro(registry, v1, [v1.event("u", {"id": 1, "name": f"n{i}"}, i) for i in range(1, n + 1)])
    v2.next_offset = n
    records += _avro(registry, v2, [v2.event("c", {"id": 2, "name": "b", "note": "new"}, n + 1),
                                    v2.event("u", {"id": 1, "name": "last", "note": "again"}, n + 2)])
    planned = []
    one_pass_plan = Landing._one_pass_plan

    def spied(self, topic, samples, intent):
        plan = one_pass_plan(self, topic, samples, intent)
        planned.append(plan and (plan.written.topic, plan.written.avro_id))
        return plan

    monkeypatch.setattr(Landing, "_one_pass_plan", spied)
    lake, report = _landed(spark, tmp_path, registry, records, monkeypatch, "one-pass")
    # planned for one pass and landed the careful way; or, the partition's last messages sampled showing the
    # second id, not planned for one pass at all
    assert planned == ([] if last_sampled else [(TOPIC, 1)]) and careful_calls == ["careful"]
    assert _counts(report) == (n + 2, {TABLE: n + 2}, {}, 0)
    assert lake.view(TABLE, order="id") == [{"id": 1, "name": "last", "note": "again"},
                                            {"id": 2, "name": "b", "note": "new"}]
    increments = _increments(lake)
    assert [row.get("note") for row in increments] == [None] * n + ["new", "again"]
    assert {row["__batch"] for row in increments} == {1}  # one increment, the careful way's
    careful, careful_report = _careful_too(spark, tmp_path, registry, records, monkeypatch)
    _same_as_careful(lake, report, careful, careful_report)


def test_an_avro_body_that_does_not_decode_is_quarantined_with_its_reason_in_one_pass(
        spark, tmp_path, registry, monkeypatch, careful_calls):
    """Its header names the topic's schema id, so it is decoded in the scan: from_avro (PERMISSIVE) gives a record of
    nulls, which has no op, as the careful way finds."""
    items = Topic(TOPIC, V1, ["id"])
    records = _avro(registry, items, [items.event("c", {"id": 1, "name": "a"}, 100),
                                      items.event("c", {"id": 2, "name": "b"}, 110),
                                      items.event("c", {"id": 3, "name": "c"}, 120)])
    key, whole = records[1]
    records[1] = (key, whole[:12])
    lake, report = _landed(spark, tmp_path, registry, records, monkeypatch, "one-pass")
    assert careful_calls == []
    assert _counts(report) == (3, {TABLE: 2}, {TABLE: 1}, 0)
    [rejected] = _quarantined(lake)
    assert (rejected["__reason"], rejected["__kafka_offset"]) == ("no op in the event", 1)
    assert bytes(rejected["__value_bytes"]) == whole[:12]
    assert lake.view(TABLE, order="id") == [{"id": 1, "name": "a"}, {"id": 3, "name": "c"}]
    careful, careful_report = _careful_too(spark, tmp_path, registry, records, monkeypatch)
    _same_as_careful(lake, report, careful, careful_report)


def test_a_value_that_is_no_avro_lands_its_topic_whole_the_careful_way(
        spark, tmp_path, registry, monkeypatch, careful_calls):
    items = Topic(TOPIC, V1, ["id"])
    n = decode.SAMPLE_LINES
    records = _avro(registry, items, [items.event("c", {"id": i, "name": f"n{i}"}, i) for i in range(1, n + 1)])
    records.append((None, b"not avro and not json"))
    lake, report = _landed(spark, tmp_path, registry, records, monkeypatch, "one-pass")
    assert careful_calls == ["careful"]
    assert _counts(report) == (n + 1, {TABLE: n}, {TABLE: 1}, 0)
    [rejected] = _quarantined(lake)
    assert (rejected["__reason"], bytes(rejected["__value_bytes"])) == ("payload does not match its schema",
                                                                        b"not avro and not json")
    careful, careful_report = _careful_too(spark, tmp_path, registry, records, monkeypatch)
    _same_as_careful(lake, report, careful, careful_report)


def _without_key_schema(registry: RegistryServer, topic: Topic, lines: list[dict]) -> Records:
    """The lines as AvroConverter writes events without a key (truncates, a table without a primary key): no key
    schema registered."""
    value = registry.register(f"{TOPIC}-value", avro_support.avro_type(topic.value_schema(), set()))
    return avro_support.converted(topic.value_schema(), topic.key_schema(), lines, value, key_id=0)


def test_an_avro_truncate_alone_in_a_new_tables_first_batch_keeps_the_key_the_registry_names_later(
        spark, tmp_path, registry, monkeypatch):
    """AvroConverter registers a topic's key schema with its first event that has a key, and a truncate has none: the
    table waits, its truncate held, for a batch whose events show the key (as JSON's does:
    tests/semantics/test_snapshot_and_truncate.py)."""
    items = Topic(TOPIC, V1, ["id"])
    first = _without_key_schema(registry, items, [items.event("t", None, 200), items.event("t", None, 210)])
    first[1] = (None, first[1][1][:8])  # a value that does not decode shows no key either: quarantined
    stand_in = KafkaStandIn(spark, first)
    lake = _kafka_lake(spark, tmp_path, registry, stand_in, monkeypatch)
    held = lake.land()
    assert (held.events_in, held.rows_out, held.held, held.quarantined) == (2, {}, {TABLE: 1}, {TABLE: 1})
    assert Catalog(spark, lake.config).tables() == []
    stand_in.records += _avro(registry, items, [  # registers the key schema
        items.event("c", {"id": 1, "name": "older than the truncate"}, 150), items.event("c", {"id": 2, "name": "b"}, 300),
        items.event("u", {"id": 2, "name": "b2"}, 310)])
    landed = lake.land()
    assert (landed.events_in, landed.rows_out, landed.held_landed) == (3, {TABLE: 4}, {TABLE: 1})
    assert Catalog(spark, lake.config).require(TABLE).key == ("id",)
    assert lake.view(TABLE, order="id") == [{"id": 2, "name": "b2"}]
    assert [(row["__op"], row["__kafka_offset"]) for row in _increments(lake)] == [("t", 0), ("c", 2), ("c", 3),
                                                                                    ("u", 4)]
    assert [row["__kafka_offset"] for row in _quarantined(lake)] == [1]


def test_a_configured_key_takes_a_new_avro_table_in_one_pass_whatever_its_key_subject_holds(
        spark, tmp_path, registry, monkeypatch, careful_calls):
    """A key that is no record (ExtractField$Key's id alone) is why `tables.<t>.key` names the columns: the registry's
    key subject is not read."""
    items = Topic(TOPIC, V1, ["id"])
    values = _without_key_schema(registry, items, [items.event("c", {"id": 1, "name": "a"}, 100),
                                                   items.event("c", {"id": 2, "name": "b"}, 110),
                                                   items.event("u", {"id": 1, "name": "a2"}, 120)])
    key_id = registry.register(f"{TOPIC}-key", '"int"')
    records = [(avro_support.encode(key_id, "int", n), value) for n, (_, value) in zip((1, 2, 1), values, strict=True)]
    lake = _kafka_lake(spark, tmp_path, registry, KafkaStandIn(spark, records), monkeypatch,
                       tables={TABLE: {"key": ["id"]}})
    report = lake.land()
    assert careful_calls == [] and _counts(report) == (3, {TABLE: 3}, {}, 0)
    assert Catalog(spark, lake.config).require(TABLE).key == ("id",)
    assert lake.view(TABLE, order="id") == [{"id": 1, "name": "a2"}, {"id": 2, "name": "b"}]


def test_an_avro_table_without_a_key_is_made_keyless_by_its_first_batch_that_is_not_only_truncates(
        spark, tmp_path, registry, monkeypatch, careful_calls):
    keyless = Topic(TOPIC, V1, None)
    records = _without_key_schema(registry, keyless, [
        keyless.event("c", {"id": 1, "name": "a"}, 100), keyless.event("t", None, 200),
        keyless.event("c", {"id": 1, "name": "a"}, 300), keyless.event("c", {"id": 1, "name": "again"}, 310)])
    lake, report = _landed(spark, tmp_path, registry, records, monkeypatch, "keyless")
    assert careful_calls == ["careful"]  # a new table whose key no schema shows: its events might all be truncates
    assert (report.events_in, report.rows_out, report.held) == (4, {TABLE: 4}, {})
    assert Catalog(spark, lake.config).require(TABLE).key == ()
    assert lake.view(TABLE, order="name") == [{"id": 1, "name": "a"}, {"id": 1, "name": "again"}]
