"""Bad input is quarantined with its reason, counted and reported; the good events beside it land (docs/design.md "Bad input")."""

from __future__ import annotations

import json

import pytest

from lakecompact.errors import UnknownTable
from lakecompact.landing.land import dry_run
from lakecompact.views.quarantine import print_quarantine, quarantine
from lakecompact.views.status import status
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import quarantined

TABLE = "public_items"


def _topic() -> Topic:
    return Topic("pg.public.items", [("id", INT), ("name", TEXT), ("qty", INT)], ["id"])


def test_bad_events_are_quarantined_with_reasons_and_the_rest_lands(lake, capsys):
    pg = _topic()
    lines = [
        pg.event("c", {"id": 1, "name": "one", "qty": 1}, 100),
        '{"topic": "pg.public.items", "partition": 0, oops this is not json}',
        pg.event("c", {"id": 2, "name": "two", "qty": 2}, 200),
        pg.event("x", {"id": 3, "name": "unknown op", "qty": 3}, 300),
        pg.event("c", {"id": None, "name": "ghost", "qty": 1}, 400),
        pg.event("c", {"id": 6, "name": "mismatch", "qty": "many"}, 500),  # int32 declared, a string sent
        json.dumps(pg.event("c", {"id": 7, "name": "cut", "qty": 7}, 600)),
        pg.event("c", {"id": 8, "name": "eight", "qty": 8}, 700),
        None,  # a whole kcat line whose message is not JSON: filled in below
        pg.event("d", {"id": 2, "name": "two", "qty": 2}, 800),
        pg.tombstone({"id": 2}),  # Kafka tombstone after the delete
        '{"partition": 0, "offset": 99, "key": null, "payload": "{}"}',  # JSON, but no topic
    ]
    lines[4]["key"] = None  # a keyed table's event without key: null message key, no key value in the image
    truncated = lines[6][: len(lines[6]) // 2]
    lines[6] = truncated  # half a line in the middle of the file, followed by whole lines
    lines[8] = pg.line(lines[7]["key"], "this message is not JSON")
    path = lake.write(lines)

    # what would land, and nothing written: no table, no state, no intent
    preview = dry_run(lake.spark, lake.config)
    assert [(p["topic"], p["table"], p["new_table"], p["events"], p["tombstones"]) for p in preview] == [
        ("pg.public.items", TABLE, True, 9, 1), (None, "_unknown", False, 3, 0),
    ]
    assert not (lake.tmp / "warehouse" / lake.database / TABLE).exists()
    assert not list((lake.tmp / "warehouse" / lake.database / "_state").rglob("*.json"))

    report = lake.land()

    assert report.rows_out == {TABLE: 4}  # c1, c2, c8, d2
    assert report.quarantined == {TABLE: 4, "_unknown": 3}
    assert report.skipped == 1
    # every line is counted once: landed, quarantined or skipped
    assert report.events_in == len(lines) == 4 + 7 + 1
    assert lake.view(TABLE) == [{"id": 1, "name": "one", "qty": 1}, {"id": 8, "name": "eight", "qty": 8}]

    stored = sorted(quarantined(lake, TABLE), key=lambda r: int(r["__origin"].rsplit(":", 1)[1]))
    assert [r["__origin"].rsplit("/", 1)[1] for r in stored] == [f"{path.name}:{n}" for n in (4, 5, 6, 9)]
    unknown_op, missing_key, mismatch, not_json = stored
    assert "unknown op" in unknown_op["__reason"] and "'x'" in unknown_op["__reason"]
    assert "missing key" in missing_key["__reason"] and "id" in missing_key["__reason"]
    assert "schema" in mismatch["__reason"]
    assert '"many"' in mismatch["payload"]  # the original message is kept, so it can be replayed
    assert not_json["__reason"] and not_json["payload"] == "this message is not JSON"
    assert [r["__kafka_topic"] for r in stored] == ["pg.public.items"] * 4
    assert [r["__kafka_offset"] for r in stored] == [2, 3, 4, 9]  # the not-JSON message was numbered last

    no_topic = sorted(quarantined(lake, None), key=lambda r: int(r["__origin"].rsplit(":", 1)[1]))
    assert [r["__origin"].rsplit(":", 1)[1] for r in no_topic] == ["2", "7", "12"]
    assert ["not a JSON object" in r["__reason"] for r in no_topic] == [True, True, False]
    assert "no topic" in no_topic[2]["__reason"]
    assert no_topic[1]["payload"] == truncated

    by_table = {row["table"]: row for row in status(lake.spark, lake.config)}
    assert by_table[f"{lake.database}.{TABLE}"]["quarantined"] == 4
    assert by_table["_unknown"]["quarantined"] == 3

    # `lakecompact quarantine`: reasons with counts and samples, under the same names
    entries = quarantine(lake.spark, lake.config, show=1)
    assert sorted(e["events"] for e in entries if e["table"] == TABLE) == [1, 1, 2]  # two share a reason
    assert sorted(e["events"] for e in entries if e["table"] == "_unknown") == [1, 2]
    assert all(len(e["samples"]) == 1 and e["batches"] == [1] for e in entries)
    every = {e["reason"]: e for e in quarantine(lake.spark, lake.config, TABLE, show=5)}
    assert sorted(s["offset"] for e in every.values() for s in e["samples"]) == [2, 3, 4, 9]
    assert "this message is not JSON" in [s["payload"] for s in every[not_json["__reason"]]["samples"]]
    print_quarantine(quarantine(lake.spark, lake.config, TABLE, show=0), TABLE)
    out = capsys.readouterr().out
    assert f"quarantine {TABLE}: 4 event(s) in 1 batch(es) (batch 1), 3 reason(s)" in out
    assert "this message is not JSON" not in out  # --show 0: reasons and counts only
    with pytest.raises(UnknownTable):
        quarantine(lake.spark, lake.config, "public_nothing")

    # nothing is landed or quarantined twice on the next run
    again = lake.land()
    assert again.rows_out == {} and again.quarantined == {}
    assert len(quarantined(lake, TABLE)) == 4


def test_incomplete_last_line_waits_until_completed(lake):
    pg = _topic()
    path = lake.write([pg.event("c", {"id": 1, "name": "one", "qty": 1}, 100)])
    last = json.dumps(pg.event("c", {"id": 2, "name": "two", "qty": 2}, 200))
    cut = len(last) // 2
    with open(path, "a") as out:
        out.write(last[:cut])  # kcat is still writing this line: no newline, not yet JSON

    first = lake.land()
    assert first.rows_out == {TABLE: 1}
    assert first.quarantined == {}
    assert lake.view(TABLE) == [{"id": 1, "name": "one", "qty": 1}]

    with open(path, "a") as out:
        out.write(last[cut:] + "\n")

    second = lake.land()
    assert second.rows_out == {TABLE: 1}
    assert second.quarantined == {}
    assert lake.view(TABLE) == [{"id": 1, "name": "one", "qty": 1}, {"id": 2, "name": "two", "qty": 2}]
    assert quarantined(lake, TABLE) == [] and quarantined(lake, None) == []


def test_requeue_lands_what_can_land_now_and_keeps_the_rest(lake):
    """Events that came before any schema was known wait in quarantine; once one is, `requeue` lands them."""
    schemaless = _topic()
    schemaless.with_schema = False
    lake.write([
        schemaless.event("c", {"id": 1, "name": "one", "qty": 1}, 100),
        schemaless.event("c", {"id": 2, "name": "two", "qty": 2}, 200),
        schemaless.event("u", {"id": 1, "name": "one", "qty": 10}, 300),
        schemaless.event("x", {"id": 3, "name": "unknown op", "qty": 3}, 350),
    ], name="early.jsonl")
    assert lake.land().quarantined == {TABLE: 4}
    later = _topic()
    later.next_offset = 4
    lake.write([later.event("u", {"id": 2, "name": "two", "qty": 20}, 400)], name="later.jsonl")
    assert lake.land().rows_out == {TABLE: 1}  # the table is created from this event's schema
    assert lake.view(TABLE) == [{"id": 2, "name": "two", "qty": 20}]

    report = lake.land(requeue=TABLE)

    assert report.rows_out == {TABLE: 3} and report.quarantined == {TABLE: 1}
    [still] = quarantined(lake, TABLE)
    assert "unknown op 'x'" in still["__reason"] and still["__origin"].endswith("early.jsonl:4")
    # older events landed later weigh by their position: key 2 keeps its newer update
    expected = [{"id": 1, "name": "one", "qty": 10}, {"id": 2, "name": "two", "qty": 20}]
    assert lake.view(TABLE, order="id") == expected
    lake.compact()
    assert lake.view(TABLE, order="id") == expected
    assert status(lake.spark, lake.config)[0]["quarantined"] == 1
    again = lake.land(requeue=TABLE)  # the unknown op fails again, alone
    assert (again.rows_out, again.quarantined) == ({TABLE: 0}, {TABLE: 1})
    assert [r["__origin"] for r in quarantined(lake, TABLE)] == [still["__origin"]]
