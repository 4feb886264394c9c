"""Property test: for random Debezium histories, the view and the compacted base equal a reference model.

Histories are generated the way a PostgreSQL source and its connector produce them (docs/design.md "Semantics"):
- several keys with inserts, updates, deletes and re-inserts; optional snapshot reads (op r) at the start
  and a re-snapshot in the middle (every live row read at one LSN);
- every real change has its own LSN (crossing 99 -> 102, so text comparison would go wrong); several
  changes of one transaction share their ts_ms, so ts_ms cannot order them;
- an update may carry the TOAST placeholder for the text column, only when the key's previous value is a
  non-null one (PostgreSQL sends the placeholder for an unchanged TOASTed value);
- a delete's before image, under REPLICA IDENTITY DEFAULT, carries the key and defaults ("" and 0), and is
  followed by a Kafka tombstone (null value);
- keys hash to two Kafka partitions, and a landing batch cuts each key's stream at its own point (as
  consumer batches cut partitions), so a key may be quiet in one batch and busy in the next;
- delivery is not the source order: some events arrive after later changes of their key (in the same batch
  or batches later, after a compaction), and replays re-send runs of delivered events (a connector
  restart), as new Kafka messages (new offsets) or as the same messages read again (same offsets);
- each batch is written to a new kcat file or appended to the previous one, and landed by its own `land`;
  compaction runs after random batches.
After every land the view must equal the reference model of everything landed so far; after every
compaction the view and the base (live rows in full, and the deleted flag of every key) must too.

Spark rounds (land, compact, read) are slow, so there are few examples, each with many keys (8 to 16
independent key histories, about 45 changes, 2-3 batches, 1-2 compactions). Knobs:
- LAKECOMPACT_PROPERTY_EXAMPLES=N   examples per run (default 5; 30+ for a deeper run);
- LAKECOMPACT_PROPERTY_SHRINK=1     let hypothesis shrink a failure (slow: every step reruns Spark); without
                                    it a failure prints the whole scenario batch by batch (`Scenario.__repr__`)
                                    and the assertion names the keys that differ;
- LAKECOMPACT_PROPERTY_DELETED_VALUES=1  also compare the values kept in soft-deleted base rows.
The generator was tuned offline against a pure-Python model of latest_rows.sql.j2 with seeded mistakes
(order by arrival / by ts_ms, tombstones dropped or ignored in the base, TOAST not resolved from the base):
each is caught by a single example with a probability between about 0.2 and 0.95.

The test functions after the property test are a hand-written regression history, then minimal cases of
what the property test found.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given

from tests.semantics.histories import (
    COLUMNS,
    DELETE_BEFORE,
    TABLE,
    TOPIC_NAME,
    TS0,
    Change,
    Delivery,
    actual_base,
    actual_view,
    check_base,
    data,
    model_events,
    property_settings,
    run_scenario,
    same,
    scenarios,
)
from tests.semantics.reference import PLACEHOLDER as MODEL_PLACEHOLDER
from tests.semantics.reference import expected_base, expected_view
from tests.support.databases import database_name
from tests.support.debezium import PLACEHOLDER, Topic

assert PLACEHOLDER == MODEL_PLACEHOLDER

_examples = itertools.count()

# PySpark raises the recursion limit while the first example runs; hypothesis warns that it will not reset it
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


@property_settings(5)
@given(scenario=scenarios())
def test_view_and_base_follow_the_reference_model(spark, tmp_path_factory, scenario):
    n = next(_examples)
    run_scenario(spark, tmp_path_factory.mktemp(f"property{n}"), scenario, database_name())


def test_view_and_base_follow_the_reference_model_with_deltas(spark, tmp_path_factory):
    """The same histories with merge-on-read: every compaction after the first writes its buckets' deltas,
    so late, duplicate and TOAST events meet keys whose row is in a delta. At least three batches: a bucket's
    delta is then written again, over the rows of the keys the batch before touched and this one does not."""
    deltas_written = []

    @property_settings(3)
    @given(scenario=scenarios(batches=(3, 4)))
    def follows(scenario):
        root = tmp_path_factory.mktemp(f"property{next(_examples)}")
        deltas_written.extend(run_scenario(spark, root, scenario, database_name(), merge_on_read=True))

    follows()
    assert any(deltas_written), f"no compaction wrote a delta, so merge-on-read went untested: {deltas_written}"


# -- a hand-written history that exercises every rule at once ------------------------------------------------


def test_regression_every_rule_at_once(lake):
    """One readable history; each key exercises one rule. The expectations are written out by hand and the
    reference model must agree with them, so this also checks the model."""
    ts = TS0
    P = PLACEHOLDER
    gone = dict(DELETE_BEFORE)

    def ev(op, k, note=None, qty=None, lsn=0, at=ts):
        row = dict(gone) if op == "d" else {"note": note, "qty": qty}
        return Change(op, k, row, lsn, at)

    # key 1: TOAST chain (placeholder after placeholder), later resolved from the base; replayed duplicate
    k1 = [ev("c", 1, "one", 1, lsn=100), ev("u", 1, P, 2, lsn=110), ev("u", 1, P, 3, lsn=120), ev("u", 1, P, 4, lsn=130)]
    # key 2: delete with a partial before image and a Kafka tombstone; replayed insert must not resurrect it
    k2 = [ev("c", 2, "two", 2, lsn=101), ev("d", 2, lsn=111)]
    # key 3: insert, delete, re-insert delivered in reverse; later delete + re-insert in one transaction
    k3 = [ev("c", 3, "three-a", 1, lsn=102), ev("d", 3, lsn=112), ev("c", 3, "three-b", 2, lsn=122),
          ev("d", 3, lsn=160, at=ts + 9000), ev("c", 3, "three-c", 3, lsn=170, at=ts + 9000)]
    # key 4: snapshot read and an update at the same LSN (u sorts after r); deleted in batch 3
    k4 = [ev("r", 4, "four-snap", 4, lsn=90), ev("u", 4, "four-upd", 5, lsn=90), ev("d", 4, lsn=161)]
    # key 5: insert and delete at the same LSN, delete delivered first (d sorts after c)
    k5 = [ev("c", 5, "five", 5, lsn=95), ev("d", 5, lsn=95)]
    # key 6: same LSN, same op: the later arrival wins
    k6 = [ev("c", 6, "six", 1, lsn=103), ev("u", 6, "six-first", 6, lsn=131), ev("u", 6, "six-second", 7, lsn=131)]
    # key 7: one transaction (same ts_ms) across LSN 98 -> 100, delivered 100, 98, 99 (text order would pick 99)
    k7 = [ev("c", 7, "seven-98", 1, lsn=98), ev("u", 7, "seven-99", 2, lsn=99), ev("u", 7, "seven-100", 3, lsn=100)]
    # key 8: TOAST placeholders in a later batch resolve from the compacted base
    k8 = [ev("c", 8, "eight", 1, lsn=104), ev("u", 8, P, 2, lsn=140), ev("u", 8, P, 3, lsn=141)]
    # key 9: a delete in a later batch keeps the base's values in the soft-deleted row; re-inserted in batch 3
    k9 = [ev("c", 9, "nine", 1, lsn=105), ev("d", 9, lsn=150), ev("c", 9, "nine-again", 2, lsn=171)]
    # key 10: only a delete was ever seen
    k10 = [ev("d", 10, lsn=151)]

    def deliver(changes, start, duplicates=()):
        out = []
        for n, c in enumerate(changes):
            out.append(Delivery(c, start + 2 * n, c in duplicates))
            if c.op == "d":
                out.append(Delivery(c, start + 2 * n + 1, c in duplicates, tombstone=True))
        return out

    batch1 = deliver(
        [k1[0], k1[1], k1[2], k2[0], k2[1], k3[2], k3[0], k3[1], k4[1], k4[0], k5[1], k5[0],
         k6[0], k6[1], k6[2], k7[2], k7[0], k7[1], k8[0], k9[0]],
        start=0,
    )
    replayed = [d for d in batch1 if d.change in (k1[1], k2[0], k2[1])]
    batch2 = deliver([k1[3], k2[0], k2[1], k8[1], k8[2], k9[1], k10[0]], start=100, duplicates=(k2[0], k2[1]))
    batch2.insert(1, replayed[0])  # the same Kafka message read again: same offset
    batch3 = deliver([k3[3], k3[4], k4[2], k9[2]], start=200)

    def row(k, note, qty):
        return {"id": k, "note": note, "qty": qty}

    after1 = {1: row(1, "one", 3), 3: row(3, "three-b", 2), 4: row(4, "four-upd", 5),
              6: row(6, "six-second", 7), 7: row(7, "seven-100", 3), 8: row(8, "eight", 1), 9: row(9, "nine", 1)}
    after2 = {**after1, 1: row(1, "one", 4), 8: row(8, "eight", 3)}
    del after2[9]
    after3 = {**after2, 3: row(3, "three-c", 3), 9: row(9, "nine-again", 2)}
    del after3[4]
    # soft-deleted rows keep the last values known, not the delete's partial before image
    deleted2 = {2: row(2, "two", 2), 5: row(5, "five", 5), 9: row(9, "nine", 1), 10: row(10, "", 0)}

    landed: list[Delivery] = []
    for n, (lines, name, expected) in enumerate(
        [(batch1, "a.jsonl", after1), (batch2, "a.jsonl", after2), (batch3, "b.jsonl", after3)]
    ):
        landed += lines
        events = model_events(landed)
        assert expected_view(events) == expected, f"the reference model disagrees with the hand-written batch {n}"
        lake.write([d.line() for d in lines], name=name)
        lake.land()
        same(actual_view(lake), expected, f"view after landing batch {n}")
        if n < 2:
            lake.compact()
            same(actual_view(lake), expected, f"view after compacting batch {n}")
            check_base(lake, events, f"base after compacting batch {n}")
    base = actual_base(lake)  # compacted after batch 2
    events = model_events(batch1 + batch2)
    same({k: r for k, (d, r) in base.items() if d}, deleted2, "deleted rows of the base")
    assert {k: r for k, (d, r) in expected_base(events).items() if d} == deleted2


# -- minimal cases of what the property test found -------------------------------------------------------------
# An event of a key that arrives in a later batch than a newer event of the same key (docs/design.md "Deletes and tombstones": "an older event
# that arrives in a later batch") must give the same table whether or not a compaction ran in between.
# Without a compaction in between, latest_rows.sql.j2 sees every event and gets these right. After one, the
# base row stands in for the folded events, but in `latest` it counts as "known" for every column at the
# row's own position: a TOAST-inherited value (or a still-unresolved null) and a soft-deleted row's last
# known values then outrank an older event that supplies the real value, and `resolved` empties `__toast`,
# so nothing records which values were inherited or unresolved.


def _pg() -> Topic:
    return Topic(TOPIC_NAME, COLUMNS, ["id"])


def test_toast_placeholder_resolves_from_an_older_update_that_lands_after_compaction(lake):
    t = _pg()
    lake.write([
        t.event("c", {"id": 1, "note": "a", "qty": 1}, 100),
        t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300),  # note unchanged since LSN 200
    ])
    lake.land()
    lake.compact()
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200)])  # older, arrives late
    lake.land()
    # source order: c(100, a) -> u(200, b) -> u(300, unchanged): the row is note b, qty 3
    assert lake.view(TABLE) == [{"id": 1, "note": "b", "qty": 3}]
    lake.compact()
    assert lake.view(TABLE) == [{"id": 1, "note": "b", "qty": 3}]


def test_toast_placeholder_resolves_when_the_insert_lands_after_compaction(lake):
    t = _pg()
    lake.write([t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300)])  # the insert is late
    lake.land()
    assert lake.view(TABLE) == [{"id": 1, "qty": 3}]  # note unknown so far: null (to_json drops it)
    lake.compact()
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100)])
    lake.land()
    assert lake.view(TABLE) == [{"id": 1, "note": "a", "qty": 3}]


def test_soft_deleted_row_keeps_the_values_of_an_older_update_that_lands_after_compaction(lake):
    t = _pg()
    lake.write([
        t.event("c", {"id": 1, "note": "a", "qty": 1}, 100),
        t.event("d", {"id": 1, **DELETE_BEFORE}, 300),
        t.tombstone({"id": 1}),
    ])
    lake.land()
    lake.compact()
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200)])
    lake.land()
    assert lake.view(TABLE) == []
    lake.compact()
    # the last values known for the key, in source order, are those of u(200)
    assert [data(r) | {"__deleted": r["__deleted"]} for r in lake.base(TABLE)] == [
        {"id": 1, "note": "b", "qty": 2, "__deleted": True}
    ]
