"""Two topics whose names map to one table (a source sharded over two servers: `shard1.public.orders` and
`shard2.public.orders` both name `public_orders`) land every event of both into that table's one increment of the
batch, whichever way each topic lands (docs/design.md "Landing protocol")."""

from __future__ import annotations

import json

from lakecompact.landing import decode
from tests.support.debezium import INT, TEXT, Topic

TABLE = "public_orders"


def _shards() -> tuple[Topic, Topic]:
    columns = [("id", INT), ("note", TEXT)]
    return Topic("shard1.public.orders", columns, ["id"]), Topic("shard2.public.orders", columns, ["id"])


def test_two_topics_of_one_table_land_every_event_of_both(lake):
    one, two = _shards()
    lake.write([one.event("c", {"id": 1, "note": "a"}, 100), two.event("c", {"id": 2, "note": "b"}, 200),
                one.event("u", {"id": 1, "note": "c"}, 300), two.event("c", {"id": 3, "note": "d"}, 400)])
    report = lake.land()
    assert report.rows_out == {TABLE: 4} and report.quarantined == {}
    assert lake.view(TABLE, order="id") == [{"id": 1, "note": "c"}, {"id": 2, "note": "b"}, {"id": 3, "note": "d"}]


def test_a_topic_that_lands_in_one_pass_and_one_that_does_not_share_the_table(lake):
    one, two = _shards()
    # the second topic comes after the lines whose schemas are sampled, in lines that do not start with their
    # topic (so the file is not planned by topic, and the topic not sampled apart): the first lands in one pass
    # and the second would land the careful way
    first = [one.event("c", {"id": i, "note": "a"}, i) for i in range(decode.SAMPLE_LINES + 1)]
    later = [_topic_not_first(two.tombstone({"id": 9})), _topic_not_first(two.event("c", {"id": -1, "note": "b"}, 5000))]
    lake.write(first + later + [one.event("u", {"id": 3, "note": "d"}, 6000)])
    report = lake.land()
    assert report.rows_out == {TABLE: decode.SAMPLE_LINES + 3} and report.skipped == 1
    view = lake.view(TABLE, order="id")
    assert len(view) == decode.SAMPLE_LINES + 2
    assert view[:2] == [{"id": -1, "note": "b"}, {"id": 0, "note": "a"}] and {"id": 3, "note": "d"} in view


def _topic_not_first(line: dict) -> str:
    return json.dumps({"partition": line["partition"], **line})
