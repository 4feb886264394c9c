"""Property test: random damage in the files source, mixed with valid events. Valid events land exactly (the
view equals the reference model of the valid events alone); every damaged line is in the quarantine, found by
its origin (file:line), with a reason; and events in = rows landed + quarantined + skipped, in the report and
in the printed line.

Damage, each on a key of its own so that the valid history is untouched: a line cut short, bytes that are not
UTF-8, a value of the wrong JSON type, a number too large for its column, an unknown op, a keyed table's event
with no key, a line that is JSON but no object, a line with no topic. Beside them, valid events that look
alarming: a huge value (9 MB of text, so that its file is streamed while the other file is read whole), and
lines delivered twice at the same offset (a consumer reading again).
LAKECOMPACT_DAMAGE_EXAMPLES=N sets the number of examples (default 2: each is a Spark round).
"""

from __future__ import annotations

import itertools
import json
import os
import re

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from lakecompact.lake.catalog import Catalog
from lakecompact.landing.land import QUARANTINE_SCHEMA
from tests.semantics.reference import expected_view
from tests.support.databases import database_name
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import Lake

TOPIC = "dmg.public.things"
TABLE = "public_things"
COLUMNS = [("id", INT), ("note", TEXT), ("qty", INT)]
HUGE_MARK, HUGE_TEXT = "__huge__", "x" * 9_000_000  # 9 MB of text in one value: its file is streamed, not read whole
DAMAGE = ("truncated", "not_utf8", "wrong_type", "too_large", "unknown_op", "no_key", "not_an_object", "no_topic")
_examples = itertools.count()


def damaged_line(kind: str, topic: Topic, key: int, position: int) -> bytes:
    def line(op: str, row: dict) -> bytes:
        return json.dumps(topic.event(op, row, position)).encode()

    if kind == "truncated":
        whole = line("c", {"id": key, "note": "cut short", "qty": 1})
        return whole[: len(whole) // 2]
    if kind == "not_utf8":
        return line("c", {"id": key, "note": "NOTUTF8", "qty": 1}).replace(b"NOTUTF8", b"\xff\xfe\xc3(")
    if kind == "wrong_type":
        return line("c", {"id": key, "note": "n", "qty": "many"})
    if kind == "too_large":
        return line("c", {"id": key, "note": "n", "qty": 2**70})
    if kind == "unknown_op":
        return line("x", {"id": key, "note": "n", "qty": 1})
    if kind == "no_key":
        event = topic.event("c", {"id": None, "note": "n", "qty": 1}, position)
        return json.dumps({**event, "key": None}).encode()
    if kind == "not_an_object":
        return b"[1, 2, 3]"
    assert kind == "no_topic"
    event = topic.event("c", {"id": key, "note": "n", "qty": 1}, position)
    return json.dumps({k: v for k, v in event.items() if k != "topic"}).encode()


@st.composite
def histories(draw):
    """(lines of two files, the valid model events, the damaged (file, line number from 1))."""
    topic = Topic(TOPIC, COLUMNS, ["id"])
    positions = itertools.count(95, 7)  # crossing 99 -> 102: compared as numbers
    valid, model = [], []
    for key in range(1, draw(st.integers(4, 10)) + 1):
        live = False
        for _ in range(draw(st.integers(1, 4))):
            position = next(positions)
            if not live or draw(st.booleans()):
                op = "c" if not live else "u"
                row = {"id": key, "note": f"k{key}p{position}", "qty": draw(st.integers(-5, 5))}
                live = True
            else:
                op, row, live = "d", {"id": key, "note": "", "qty": 0}, False
            valid.append(json.dumps(topic.event(op, row, position)).encode())
            model.append({"op": op, "id": key, "row": {k: v for k, v in row.items() if k != "id"},
                          "position": position, "arrival": 0})
            if op == "d":
                valid.append(json.dumps(topic.tombstone({"id": key})).encode())
    position = next(positions)  # the huge value: a marker here, the text itself when the file is written
    valid.append(json.dumps(topic.event("c", {"id": 500, "note": HUGE_MARK, "qty": 1}, position)).encode())
    model.append({"op": "c", "id": 500, "row": {"note": HUGE_MARK, "qty": 1}, "position": position, "arrival": 0})
    lines = list(valid)
    for line in draw(st.lists(st.sampled_from(valid), max_size=3)):  # read again at the same offset
        lines.insert(draw(st.integers(lines.index(line) + 1, len(lines))), line)
    kinds = draw(st.lists(st.sampled_from(DAMAGE), min_size=3, max_size=10))
    damaged = []
    for n, kind in enumerate(kinds):
        bad = damaged_line(kind, topic, 1000 + n, next(positions))
        damaged.append(bad)
        lines.insert(draw(st.integers(0, len(lines) - 1)), bad)  # never last: a last line may still be growing
    # two files: the one with the huge value is streamed in splits, the other read whole (files.py)
    files: list[list[bytes]] = [[], []]
    for line in lines:
        files[1 if HUGE_MARK.encode() in line else draw(st.integers(0, 1))].append(line)
    where = {(f, n + 1) for f, file in enumerate(files) for n, line in enumerate(file) if any(line is b for b in damaged)}
    return files, model, where


@settings(
    max_examples=int(os.environ.get("LAKECOMPACT_DAMAGE_EXAMPLES", "2")), deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None, print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(history=histories())
def test_valid_events_land_exactly_and_every_damaged_line_is_quarantined(spark, tmp_path_factory, capsys, history):
    files, model, damaged = history
    lake = Lake(spark, tmp_path_factory.mktemp(f"damage{next(_examples)}"), database_name())
    for n, lines in enumerate(files):
        text = b"".join(line + b"\n" for line in lines)
        (lake.events_dir / f"part-{n}.jsonl").write_bytes(text.replace(HUGE_MARK.encode(), HUGE_TEXT.encode()))

    capsys.readouterr()
    report = lake.land()
    printed = capsys.readouterr().out

    view = {row["id"]: {"id": row["id"], "note": row["note"], "qty": row["qty"]} for row in lake.view(TABLE)}
    expected = expected_view(model)
    expected[500]["note"] = HUGE_TEXT
    assert view == expected

    catalog = Catalog(spark, lake.config)
    quarantined = [row.asDict() for root in (catalog.paths(TABLE).quarantine, catalog.unplaced_quarantine)
                   if catalog.storage.exists(root)  # a root whose only batch went empty is left empty: read with the schema
                   for row in spark.read.schema(QUARANTINE_SCHEMA).parquet(root).collect()]
    origins = sorted((int(path.rsplit("part-", 1)[1][0]), int(line))
                     for path, line in (row["__origin"].rsplit(":", 1) for row in quarantined))
    assert origins == sorted(damaged), "every damaged line quarantined, once, and nothing else"
    assert all(row["__reason"] for row in quarantined)

    total_quarantined = sum(report.quarantined.values())
    assert total_quarantined == len(damaged)
    lines = sum(len(f) for f in files)
    assert report.events_in == lines == sum(report.rows_out.values()) + total_quarantined + report.skipped
    summary = re.search(r"(\d+) events in, (\d+) rows out to \d+ table\(s\), (\d+) quarantined, (\d+) skipped", printed)
    assert summary is not None, printed
    events_in, rows_out, printed_quarantined, skipped = map(int, summary.groups())
    assert events_in == rows_out + printed_quarantined + skipped == lines
