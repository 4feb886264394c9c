"""Property test: for random Debezium histories, the view and the compacted base equal a reference model.

Histories are generated the way a PostgreSQL source and its connector produce them (DESIGN "Semantics"):
- a few keys with inserts, updates, deletes and re-inserts; optional snapshot reads (op r) at the start and
  in the middle (a re-snapshot reads every live row at one LSN);
- every real change has its own LSN; several changes of one transaction share their ts_ms;
- an update may carry the TOAST placeholder for the text column, only when the key's previous value is a
  non-null one (PostgreSQL sends the placeholder for an unchanged TOASTed value);
- a delete's before image, under REPLICA IDENTITY DEFAULT, carries the key and defaults ("" and 0), and is
  followed by a Kafka tombstone;
- delivery is not the source order: some events arrive late (after later ones, possibly batches later),
  and replays re-send a run of already delivered events (a connector restart), either as new Kafka
  messages (new offsets) or as the same messages read again (same offsets);
- the delivered lines are cut into batches, each written to a new kcat file or appended to the previous
  one, and landed by its own `land`; compaction runs after random batches.
After every land the view must equal the reference model of everything landed so far; after every
compaction the view and the base (live rows, and the deleted flag of every key) must too.

Spark rounds are slow, so the number of examples is small (LAKECOMPACT_PROPERTY_EXAMPLES overrides it), and
shrinking is off unless LAKECOMPACT_PROPERTY_SHRINK=1: a failure prints the whole unshrunk scenario, which
`Scenario.__repr__` lays out batch by batch.
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.semantics.reference import PLACEHOLDER as MODEL_PLACEHOLDER
from tests.semantics.reference import expected_base, expected_view
from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic
from tests.support.lake import Lake

assert PLACEHOLDER == MODEL_PLACEHOLDER

TOPIC_NAME = "prop.public.things"
TABLE = "public_things"
COLUMNS = [("id", INT), ("note", TEXT), ("qty", INT)]
DELETE_BEFORE = {"note": "", "qty": 0}  # REPLICA IDENTITY DEFAULT: the key, other columns at their defaults
TS0 = 1_700_000_000_000

_examples = itertools.count()


def topic() -> Topic:
    return Topic(TOPIC_NAME, COLUMNS, ["id"])


# -- scenarios ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Change:
    """One real change at the source."""

    op: str
    id: int
    row: dict  # note and qty; the before image for op d
    position: int
    ts_ms: int

    def __repr__(self) -> str:
        values = "" if self.op == "d" else f" note={self.row['note']!r} qty={self.row['qty']!r}"
        return f"{self.op}(id={self.id} lsn={self.position} ts={self.ts_ms - TS0}{values})"


@dataclass(frozen=True)
class Delivery:
    """One kcat line: a change as delivered (with its Kafka offset), or the Kafka tombstone after a delete."""

    change: Change
    offset: int
    duplicate: bool = False
    tombstone: bool = False

    def line(self, t: Topic) -> dict:
        c = self.change
        if self.tombstone:
            return t.tombstone({"id": c.id}, offset=self.offset)
        return t.event(c.op, {"id": c.id, **c.row}, c.position, ts_ms=c.ts_ms, offset=self.offset)

    def __repr__(self) -> str:
        what = f"tombstone(id={self.change.id})" if self.tombstone else repr(self.change)
        return f"@{self.offset} {what}{' [dup]' if self.duplicate else ''}"


@dataclass(frozen=True)
class Batch:
    deliveries: tuple[Delivery, ...]
    file: str
    compact_after: bool


@dataclass(frozen=True)
class Scenario:
    changes: tuple[Change, ...]  # in source order
    batches: tuple[Batch, ...]

    def __repr__(self) -> str:
        out = ["Scenario(", "  source order:"]
        out += [f"    {c!r}" for c in self.changes]
        for n, b in enumerate(self.batches):
            out.append(f"  batch {n} -> {b.file}{' then compact' if b.compact_after else ''}:")
            out += [f"    {d!r}" for d in b.deliveries]
        out.append(")")
        return "\n".join(out)

    def _repr_pretty_(self, printer, cycle) -> None:  # how hypothesis prints the falsifying example
        printer.text(repr(self))


NOTE_KINDS = ["new", "new", "same", "toast", "toast", "null"]
ACTIONS = ["write", "write", "write", "write", "delete", "delete", "snapshot"]


@st.composite
def scenarios(draw) -> Scenario:
    # many keys per example: each Spark round is slow, and keys are independent histories
    n_keys = draw(st.integers(2, 8), label="keys")
    ids = list(range(1, n_keys + 1))
    live: dict[int, dict] = {}  # the source table: id -> {note, qty}
    changes: list[Change] = []
    # LSNs cross 99 -> 102 so that comparing them as text would go wrong
    position, ts, serial = 90, TS0, itertools.count(1)

    def fresh(k: int, kind: str) -> dict:
        n = next(serial)
        return {"note": None if kind == "null" else f"note {k}.{n}", "qty": n}

    def snapshot() -> None:
        nonlocal position, ts
        for k in sorted(live):
            changes.append(Change("r", k, dict(live[k]), position, ts))
        position += 3
        ts += 1000

    if draw(st.booleans(), label="initial snapshot"):
        for k in ids:
            if draw(st.booleans()):
                live[k] = fresh(k, "new")
        snapshot()

    steps = draw(
        st.lists(
            st.tuples(st.sampled_from(ids), st.sampled_from(ACTIONS), st.sampled_from(NOTE_KINDS), st.booleans()),
            min_size=1,
            max_size=6 * n_keys,
        ),
        label="steps",
    )
    for k, action, note_kind, new_transaction in steps:
        if action == "snapshot":
            if live:
                snapshot()
            continue
        if new_transaction:
            ts += 1000
        if action == "delete" and k in live:
            changes.append(Change("d", k, dict(DELETE_BEFORE), position, ts))
            del live[k]
        elif k not in live:
            live[k] = fresh(k, "null" if note_kind == "null" else "new")
            changes.append(Change("c", k, dict(live[k]), position, ts))
        else:
            previous = live[k]
            values = fresh(k, note_kind)
            if note_kind == "same":
                values["note"] = previous["note"]
            sent = dict(values)
            if note_kind == "toast":
                values["note"] = previous["note"]
                if previous["note"] is not None:  # a null is never TOASTed
                    sent["note"] = PLACEHOLDER
            live[k] = values
            changes.append(Change("u", k, sent, position, ts))
        position += 3

    if not changes:  # a snapshot of an empty table and nothing else
        live[1] = fresh(1, "new")
        changes.append(Change("c", 1, dict(live[1]), position, ts))

    # delivery: source order, then some events delayed, then replays of already delivered runs
    order: list[tuple[Change, bool, bool]] = []  # (change, duplicate, same offset as the original)
    for c in changes:
        order.append((c, False, False))
    for _ in range(draw(st.integers(0, n_keys), label="late events")):
        i = draw(st.integers(0, len(order) - 1))
        j = draw(st.integers(i, len(order) - 1))
        order.insert(j, order.pop(i))
    for _ in range(draw(st.integers(0, 3), label="replays")):
        a = draw(st.integers(0, len(order) - 1))
        b = draw(st.integers(a + 1, min(len(order), a + 6)))
        at = draw(st.integers(b, len(order)))
        same_offsets = draw(st.booleans())
        order[at:at] = [(c, True, same_offsets) for c, _, _ in order[a:b]]

    offsets: dict[tuple[int, bool], int] = {}  # (change, tombstone) -> offset of its first delivery
    next_offset = itertools.count()
    deliveries: list[Delivery] = []
    for c, duplicate, same_offset in order:
        # Debezium follows a delete with a Kafka tombstone (null value)
        for tombstone in (False, True) if c.op == "d" else (False,):
            offset = offsets[id(c), tombstone] if duplicate and same_offset else next(next_offset)
            offsets.setdefault((id(c), tombstone), offset)
            deliveries.append(Delivery(c, offset, duplicate, tombstone))

    n_batches = draw(st.integers(1, min(3, len(deliveries))), label="batches")
    cuts = sorted(draw(st.lists(st.integers(1, len(deliveries) - 1), min_size=n_batches - 1,
                                max_size=n_batches - 1, unique=True), label="cuts")) if n_batches > 1 else []
    batches, file_number = [], 0
    for n, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(deliveries)])):
        if n > 0 and draw(st.booleans(), label="new file"):
            file_number += 1
        compact_after = draw(st.booleans(), label="compact")
        batches.append(Batch(tuple(deliveries[start:end]), f"part-{file_number}.jsonl", compact_after))
    return Scenario(tuple(changes), tuple(batches))


# -- checking ------------------------------------------------------------------------------------------


def model_events(deliveries: list[Delivery]) -> list[dict]:
    """The delivered events (tombstones skipped) as the reference model takes them, in arrival order."""
    return [
        {"op": d.change.op, "id": d.change.id, "row": dict(d.change.row), "position": d.change.position,
         "arrival": n}
        for n, d in enumerate(deliveries)
        if not d.tombstone
    ]


def data(row: dict) -> dict:
    # to_json leaves null fields out
    return {"id": row["id"], "note": row.get("note"), "qty": row.get("qty")}


def actual_view(lake: Lake) -> dict:
    return {r["id"]: data(r) for r in lake.view(TABLE)}


def actual_base(lake: Lake) -> dict:
    rows = lake.base(TABLE)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"the base holds a key more than once: {sorted(rows, key=lambda r: r['id'])}"
    return {r["id"]: (r["__deleted"], data(r)) for r in rows}


def check_base(lake: Lake, events: list[dict], where: str) -> None:
    """Live rows in full; for deleted keys the flag and the key set (their values are checked separately)."""
    expected = expected_base(events)
    actual = actual_base(lake)
    assert {k: d for k, (d, _) in actual.items()} == {k: d for k, (d, _) in expected.items()}, where
    assert {k: r for k, (d, r) in actual.items() if not d} == {k: r for k, (d, r) in expected.items() if not d}, where


def run_scenario(spark, root, scenario: Scenario, database: str, *, deleted_values: bool = False) -> None:
    lake = Lake(spark, root, database)
    t = topic()
    landed: list[Delivery] = []
    for n, batch in enumerate(scenario.batches):
        lake.write([d.line(t) for d in batch.deliveries], name=batch.file)
        lake.land()
        landed += batch.deliveries
        events = model_events(landed)
        assert actual_view(lake) == expected_view(events), f"view after landing batch {n}"
        if batch.compact_after:
            lake.compact()
            assert actual_view(lake) == expected_view(events), f"view after compacting batch {n}"
            check_base(lake, events, f"base after compacting batch {n}")
            if deleted_values:
                assert actual_base(lake) == expected_base(events), f"base (deleted rows too) after batch {n}"


_phases = [Phase.explicit, Phase.reuse, Phase.generate]
if os.environ.get("LAKECOMPACT_PROPERTY_SHRINK") == "1":
    _phases.append(Phase.shrink)


@settings(
    max_examples=int(os.environ.get("LAKECOMPACT_PROPERTY_EXAMPLES", "10")),
    deadline=None,
    phases=_phases,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=scenarios())
def test_view_and_base_follow_the_reference_model(spark, tmp_path_factory, scenario):
    n = next(_examples)
    run_scenario(spark, tmp_path_factory.mktemp(f"property{n}"), scenario, f"prop{n}_{uuid.uuid4().hex[:8]}")


# -- a hand-written history that exercises every rule at once ------------------------------------------------


def test_regression_every_rule_at_once(lake):
    """One readable history; each key exercises one rule. The expectations are written out by hand and the
    reference model must agree with them, so this also checks the model."""
    t = topic()
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
        lake.write([d.line(t) for d in lines], name=name)
        lake.land()
        assert actual_view(lake) == expected, f"view after landing batch {n}"
        if n < 2:
            lake.compact()
            assert actual_view(lake) == expected, f"view after compacting batch {n}"
            check_base(lake, events, f"base after compacting batch {n}")
    base = actual_base(lake)  # compacted after batch 2
    events = model_events(batch1 + batch2)
    assert {k: r for k, (d, r) in base.items() if d} == deleted2
    assert {k: r for k, (d, r) in expected_base(events).items() if d} == deleted2
