"""Envelopes without a schema (Kafka Connect JSON with `schemas.enable=false`) of a table whose schema is known land
in one pass, read with the table's own schema; a topic with any event in another form lands whole the careful way,
with the same rows and reasons (docs/design.md "Landing protocol")."""

from __future__ import annotations

import json

from lakecompact.landing import decode
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import quarantined

TABLE = "public_items"
COLUMNS = [("id", INT), ("name", TEXT)]


def _known_table(lake) -> Topic:
    """The table made by an event with its schema; the topic's later events come without one."""
    lake.write([Topic("pg.public.items", COLUMNS, ["id"]).event("c", {"id": 0, "name": "seed"}, 10)])
    assert lake.land().rows_out == {TABLE: 1}
    return Topic("pg.public.items", COLUMNS, ["id"], with_schema=False, next_offset=1)


def test_envelopes_without_a_schema_of_a_known_table_land_in_one_pass(lake, careful_calls):
    items = _known_table(lake)
    careful_calls.clear()
    lake.write([items.event("c", {"id": 1, "name": "a"}, 100), items.event("u", {"id": 0, "name": "b"}, 200),
                items.event("d", {"id": 1, "name": "a"}, 300), items.tombstone({"id": 1})])
    report = lake.land()
    assert careful_calls == []
    assert (report.events_in, report.rows_out, report.skipped, report.quarantined) == (4, {TABLE: 3}, 1, {})
    assert lake.view(TABLE, order="id") == [{"id": 0, "name": "b"}]


def test_envelopes_without_a_schema_of_a_new_table_land_the_careful_way(lake, careful_calls):
    items = Topic("pg.public.items", COLUMNS, ["id"], with_schema=False)
    lake.write([items.event("c", {"id": 1, "name": "a"}, 100)])
    report = lake.land()
    assert careful_calls == ["careful"]
    assert report.rows_out == {TABLE: 0} and report.quarantined == {TABLE: 1}  # no schema to read them with


def _misfits(items: Topic) -> list[dict | str]:
    """Events of the topic that are not plain envelopes of its table, each with the reason the careful way gives."""
    good = items.event("c", {"id": 5, "name": "e"}, 500)
    control = items.event("c", {"id": 6, "name": "f"}, 600)
    control["payload"] = control["payload"].replace('"f"', '"f\u0001"')  # a raw control character in a string
    no_op = items.event("c", {"id": 7, "name": "g"}, 700)
    no_op["payload"] = json.dumps({k: v for k, v in json.loads(no_op["payload"]).items() if k != "op"})
    wrapped = Topic("pg.public.items", COLUMNS, ["id"], next_offset=90).event("c", {"id": 8, "name": "h"}, 800)
    return [good, control, no_op, wrapped]


def test_a_topic_with_events_in_other_forms_lands_whole_the_careful_way(lake, careful_calls):
    items = _known_table(lake)
    careful_calls.clear()
    # the misfits come after the lines sampled, which show a plain topic: its one-pass scan finds them
    n = decode.SAMPLE_LINES
    plain = [items.event("u", {"id": 1, "name": f"n{i}"}, i) for i in range(1, n + 1)]
    lake.write(plain + _misfits(items))
    report = lake.land()
    assert careful_calls == ["careful"]
    assert report.events_in == n + 4 and report.rows_out == {TABLE: n + 2} and report.quarantined == {TABLE: 2}
    reasons = sorted(row["__reason"] for row in quarantined(lake, TABLE))
    assert reasons == ["no op in the event", "payload does not match its schema"]
    assert lake.view(TABLE, order="id") == [{"id": 0, "name": "seed"}, {"id": 1, "name": f"n{n}"},
                                            {"id": 5, "name": "e"}, {"id": 8, "name": "h"}]
