"""A value that starts with its topic's schema as written (sampled from the batch's first lines) is not parsed for
its schema (docs/design.md "Landing protocol"); a schema whose text holds the key "payload" itself, and a value
written another way, are parsed, and land the same."""

from __future__ import annotations

import json

from lakecompact.landing import decode
from tests.support.debezium import INT, TEXT, Topic

TABLE = "public_outbox"


def _topic(note_schema: dict) -> Topic:
    # an outbox table: a column named payload, whose values hold the key "payload" too
    return Topic("pg.public.outbox", [("id", INT), ("payload", TEXT), ("note", note_schema)], ["id"])


def _events(pg: Topic) -> list[dict]:
    return [
        pg.event("c", {"id": 1, "payload": '{"payload":1}', "note": "a"}, 100),
        pg.event("c", {"id": 2, "payload": ',"payload":', "note": "b"}, 200),
        pg.event("u", {"id": 1, "payload": "x", "note": "c"}, 300),
    ]


EXPECTED = [{"id": 1, "payload": "x", "note": "c"}, {"id": 2, "payload": ',"payload":', "note": "b"}]


def _known(spark, events: list[dict]) -> dict[str, str]:
    raw = spark.createDataFrame([(e["topic"], e["payload"]) for e in events], "__kafka_topic STRING, payload STRING")
    return decode.schemas_as_written(raw)


def test_a_column_named_payload_lands_with_its_schema_taken_as_written(lake, spark):
    pg = _topic(TEXT)
    events = _events(pg)
    assert {t: json.loads(text) for t, text in _known(spark, events).items()} == {pg.name: pg.value_schema()}
    lake.write(events)
    report = lake.land()
    assert report.rows_out == {TABLE: 3} and report.quarantined == {}
    assert lake.view(TABLE, order="id") == EXPECTED


def test_a_schema_holding_the_key_payload_is_parsed_instead(lake, spark):
    # Connect schema parameters are a map: a parameter named "payload" puts `,"payload":` inside the schema's text
    events = _events(_topic({**TEXT, "parameters": {"length": "10", "payload": "kept"}}))
    assert _known(spark, events) == {}
    lake.write(events)
    report = lake.land()
    assert report.rows_out == {TABLE: 3} and report.quarantined == {}
    assert lake.view(TABLE, order="id") == EXPECTED


def test_the_same_schema_written_with_spaces_lands_beside_the_compact_form(lake):
    pg = _topic(TEXT)
    events = _events(pg)
    spaced = json.loads(events[1]["payload"])  # {"schema": {...}, "payload": {...}}, as json.dumps spaces it
    events[1] = {**events[1], "payload": json.dumps(spaced), "key": json.dumps(json.loads(events[1]["key"]))}
    lake.write(events)
    report = lake.land()
    assert report.rows_out == {TABLE: 3} and report.quarantined == {}
    assert lake.view(TABLE, order="id") == EXPECTED
