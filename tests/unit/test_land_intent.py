"""The land intent (docs/design.md "Landing protocol") is written as the same JSON a rerun reads back: the three
kinds of input, each a round trip, in the file's shape."""

from __future__ import annotations

from datetime import UTC, datetime

from lakecompact.landing.files import FileRange
from lakecompact.landing.intent import LandIntent, Requeue

NEW = LandIntent.new(7, datetime(2026, 11, 28, 14, 5, 6, tzinfo=UTC))
HEAD = {"batch": 7, "hour": "2026112814", "landed_at": "2026-11-28T14:05:06+00:00"}


def test_each_kind_of_input_is_written_in_the_files_shape_and_read_back():
    files = NEW.reading(files=(FileRange("file:/e/a.jsonl", 0, 3, 120, whole=True, topics=("t", "u")),
                               FileRange("file:/e/b.jsonl", 2, 5, 99)))
    kafka = NEW.reading(kafka={"t:0": {"start": 4, "end": 9}})
    requeue = NEW.reading(requeue=Requeue("orders", ("file:/w/orders/_quarantine/batch=3",)))
    assert files.to_json() == {**HEAD, "files": [
        {"path": "file:/e/a.jsonl", "start": 0, "end": 3, "size": 120, "whole": True, "topics": ["t", "u"]},
        {"path": "file:/e/b.jsonl", "start": 2, "end": 5, "size": 99, "whole": False}]}
    assert kafka.to_json() == {**HEAD, "kafka": {"t:0": {"start": 4, "end": 9}}}
    assert requeue.to_json() == {**HEAD, "requeue": {"table": "orders", "folders": ["file:/w/orders/_quarantine/batch=3"]}}
    for intent in (NEW, files, kafka, requeue):
        assert LandIntent.from_json(intent.to_json()) == intent


def test_an_intent_narrowed_to_topics_keeps_the_input_that_may_hold_them():
    a = FileRange("file:/e/a.jsonl", 0, 3, 120, topics=("t",))
    b = FileRange("file:/e/b.jsonl", 0, 4, 99, topics=("t", "u"))
    unnamed = FileRange("file:/e/c.jsonl", 1, 6, 99)
    files = NEW.reading(files=(a, b, unnamed))
    assert files.topics_named() == ({"t", "u"}, True)
    assert files.of_topics({"u"}).files == (b, unnamed)
    assert files.events_apart_from({"u"}) == 3  # a's lines: no scan of u reads them
    kafka = NEW.reading(kafka={"t:0": {"start": 4, "end": 9}, "t:1": {"start": 2, "end": 2}, "u.v:0": {"start": 0, "end": 1}})
    assert kafka.topics_named() == ({"t", "u.v"}, False)
    assert kafka.of_topics({"t"}).kafka == {"t:0": {"start": 4, "end": 9}, "t:1": {"start": 2, "end": 2}}
    assert kafka.events_apart_from({"t"}) == 1
