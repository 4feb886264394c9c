"""The random Debezium histories of the property tests (tests/semantics/test_property.py, and the change feed's,
tests/compaction/test_change_feed_property.py): a source's changes, their deliveries in landing batches with the
compaction points (`scenarios`, a hypothesis strategy), the reference model's events of what was delivered, the
checks of a lake's view and base against the model, a scenario run on a lake, and the hypothesis settings of the
Spark-backed property tests (the knobs are in test_property.py's docstring)."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

from lakecompact.compaction.compact import Compactor
from lakecompact.lake.catalog import Catalog
from tests.semantics.reference import expected_base, expected_view
from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic
from tests.support.lake import Lake

TOPIC_NAME = "prop.public.things"
TABLE = "public_things"
COLUMNS = [("id", INT), ("note", TEXT), ("qty", INT)]
DELETE_BEFORE = {"note": "", "qty": 0}  # REPLICA IDENTITY DEFAULT: the key, other columns at their defaults
PARTITIONS = 2
TS0 = 1_700_000_000_000


# -- scenarios ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)  # compared by identity: a duplicate delivery is the same Change
class Change:
    """One real change at the source."""

    op: str
    id: int
    row: dict  # note and qty; the before image for op d
    position: int
    ts_ms: int

    def __repr__(self) -> str:
        if self.op == "t":
            return f"t(lsn={self.position} ts={self.ts_ms - TS0})"
        values = "" if self.op == "d" else f" note={self.row['note']!r} qty={self.row['qty']!r}"
        return f"{self.op}(id={self.id} lsn={self.position} ts={self.ts_ms - TS0}{values})"


@dataclass(frozen=True)
class Delivery:
    """One kcat line: a change as delivered (Kafka partition and offset), or the Kafka tombstone after a delete."""

    change: Change
    offset: int
    duplicate: bool = False
    tombstone: bool = False
    partition: int = 0

    def line(self) -> dict:
        c = self.change
        t = Topic(TOPIC_NAME, COLUMNS, ["id"], partition=self.partition)
        if self.tombstone:
            return t.tombstone({"id": c.id}, offset=self.offset)
        return t.event(c.op, {"id": c.id, **c.row}, c.position, ts_ms=c.ts_ms, offset=self.offset)

    def __repr__(self) -> str:
        what = f"tombstone(id={self.change.id})" if self.tombstone else repr(self.change)
        return f"p{self.partition}@{self.offset} {what}{' [dup]' if self.duplicate else ''}"


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


NOTE_KINDS = ["new", "new", "same", "toast", "toast", "toast", "null"]
ACTIONS = ["write", "write", "write", "delete"]


TRUNCATED = 0  # the id of a truncate's Change: it has no key


def source_history(draw, ids: list[int], truncates: bool = False) -> list[Change]:
    """What the database does, in LSN order, as a PostgreSQL connector reports it; `truncates`: up to two
    truncates of the table among the changes."""
    live: dict[int, dict] = {}  # the source table: id -> {note, qty}
    changes: list[Change] = []
    position, ts, serial = 90, TS0, itertools.count(1)

    def fresh(k: int, kind: str) -> dict:
        n = next(serial)  # every value is unique, so a stale value is always visible
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
            min_size=2 * len(ids),
            max_size=4 * len(ids),
        ),
        label="steps",
    )
    resnapshot_at = draw(st.one_of(st.none(), st.integers(0, len(steps) - 1)), label="re-snapshot")
    truncate_at = set(draw(st.lists(st.integers(0, len(steps) - 1), max_size=2), label="truncates")) if truncates else set()
    for n, (k, action, note_kind, new_transaction) in enumerate(steps):
        if n == resnapshot_at and live:
            snapshot()
        if n in truncate_at:
            ts += 1000
            changes.append(Change("t", TRUNCATED, {}, position, ts))
            live.clear()
            position += 3
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
    return changes


@st.composite
def scenarios(draw, batches: tuple[int, int] = (2, 3), truncates: bool = False) -> Scenario:
    """`batches`: the fewest and most landing batches; `truncates`: source_history's."""
    # many keys per example: each Spark round is slow, and keys are independent histories
    ids = list(range(1, draw(st.integers(8, 16), label="keys") + 1))
    changes = source_history(draw, ids, truncates)
    n_batches = draw(st.integers(*batches), label="batches")

    # each key's changes, in source order, spread over the batches at the key's own pace
    parts: list[list[tuple[Change, bool, bool]]] = [[] for _ in range(n_batches)]  # (change, dup, same offset)
    batch_of: dict[int, int] = {}
    for k in ids + ([TRUNCATED] if truncates else []):
        b = draw(st.integers(0, n_batches - 1))
        for c in changes:
            if c.id == k:
                batch_of[id(c)] = b
                b = min(n_batches - 1, b + draw(st.sampled_from([0, 0, 0, 1])))
    for c in changes:
        parts[batch_of[id(c)]].append((c, False, False))

    def where(c: Change) -> tuple[int, int]:
        return next((b, j) for b, part in enumerate(parts) for j, (x, dup, _) in enumerate(part) if x is c and not dup)

    # late events: delivered after the next, or after all, later changes of their key (only those matter),
    # in the same batch or a later one
    for _ in range(draw(st.integers(len(ids) // 2, len(ids)), label="late events")):
        movable = [c for c in changes if any(x.id == c.id and x.position > c.position for x in changes)]
        if not movable:
            break
        c = movable[draw(st.integers(0, len(movable) - 1))]
        later = [x for x in changes if x.id == c.id and x.position > c.position]
        passed = later[draw(st.sampled_from([0, len(later) - 1]))]
        b, j = where(c)
        item = parts[b].pop(j)
        after_b, after_j = where(passed)
        to = draw(st.sampled_from([after_b, min(after_b + 1, n_batches - 1), n_batches - 1]))
        parts[to].insert(draw(st.integers(after_j + 1 if to == after_b else 0, len(parts[to]))), item)

    # replays: a run of delivered events is re-sent, later in the same batch or in a later one
    for _ in range(draw(st.integers(0, 3), label="replays")):
        b = draw(st.integers(0, n_batches - 1))
        if not parts[b]:
            continue
        start = draw(st.integers(0, len(parts[b]) - 1))
        end = draw(st.integers(start + 1, min(len(parts[b]), start + 6)))
        to = draw(st.integers(b, n_batches - 1))
        at = draw(st.integers(end if to == b else 0, len(parts[to])))
        same_offsets = draw(st.booleans())
        parts[to][at:at] = [(c, True, same_offsets) for c, _, _ in parts[b][start:end]]

    offsets: dict[tuple[int, bool], int] = {}  # (change, tombstone) -> offset of its first delivery
    next_offset = [itertools.count() for _ in range(PARTITIONS)]
    batches, file_number = [], 0
    for n, part in enumerate(parts):
        deliveries: list[Delivery] = []
        for c, duplicate, same_offset in part:
            partition = c.id % PARTITIONS
            # Debezium follows a delete with a Kafka tombstone
            for tombstone in (False, True) if c.op == "d" else (False,):
                if duplicate and same_offset:
                    offset = offsets[id(c), tombstone]
                else:
                    offset = next(next_offset[partition])
                offsets.setdefault((id(c), tombstone), offset)
                deliveries.append(Delivery(c, offset, duplicate, tombstone, partition))
        if n > 0 and draw(st.booleans(), label="new file"):
            file_number += 1
        compact_after = draw(st.sampled_from([True, True, False]), label="compact")
        if deliveries:
            batches.append(Batch(tuple(deliveries), f"part-{file_number}.jsonl", compact_after))
    return Scenario(tuple(changes), tuple(batches))


# -- checking ------------------------------------------------------------------------------------------


def model_events(deliveries: list[Delivery]) -> list[dict]:
    """The delivered events (Kafka tombstones skipped) as the reference model takes them, in arrival order."""
    return [
        {"op": d.change.op, "id": d.change.id, "row": dict(d.change.row), "position": d.change.position,
         "arrival": n, "ts": d.change.ts_ms}
        for n, d in enumerate(deliveries)
        if not d.tombstone
    ]


def data(row: dict) -> dict:
    # to_json leaves null fields out
    return {"id": row["id"], "note": row.get("note"), "qty": row.get("qty")}


def made(lake: Lake) -> bool:
    """Whether the table is made; a table whose landed events are all truncates is not, and holds them until its
    key is known (docs/design.md "Keys and keyless tables")."""
    catalog = Catalog(lake.spark, lake.config)
    if TABLE in catalog.tables():
        return True
    assert catalog.held_truncates(TABLE), "no table, and no truncates held for it"
    return False


def actual_view(lake: Lake) -> dict:
    """The view's rows by key; none while the table is not made (`made`)."""
    if not made(lake):
        return {}
    rows = lake.view(TABLE)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"the view shows a key more than once: {rows}"
    return {r["id"]: data(r) for r in rows}


def actual_base(lake: Lake) -> dict:
    rows = lake.base(TABLE)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)), f"the base holds a key more than once: {rows}"
    return {r["id"]: (r["__deleted"], data(r)) for r in rows}


def same(actual: dict, expected: dict, where: str) -> None:
    """Equality, with a message that names only the keys that differ."""
    if actual != expected:
        keys = sorted(k for k in actual.keys() | expected.keys() if actual.get(k) != expected.get(k))
        diff = "\n".join(f"  id {k}: actual {actual.get(k)!r}, expected {expected.get(k)!r}" for k in keys)
        raise AssertionError(f"{where}: keys {keys} differ\n{diff}")


def check_view(lake: Lake, events: list[dict], where: str) -> None:
    same(actual_view(lake), expected_view(events), where)


def check_base(lake: Lake, events: list[dict], where: str, *, deleted_values: bool = False) -> None:
    """Live rows in full and every key's deleted flag; the values of deleted rows only if asked."""
    expected = expected_base(events)
    actual = actual_base(lake)
    same({k: d for k, (d, _) in actual.items()}, {k: d for k, (d, _) in expected.items()}, f"{where}: deleted flags")
    same({k: r for k, (d, r) in actual.items() if not d}, {k: r for k, (d, r) in expected.items() if not d},
         f"{where}: live rows")
    if deleted_values:
        same(actual, expected, f"{where}: deleted rows")


# the values of soft-deleted rows are checked too when asked (see the last test of test_property.py for why not by default)
DELETED_VALUES = os.environ.get("LAKECOMPACT_PROPERTY_DELETED_VALUES") == "1"


def run_scenario(spark, root, scenario: Scenario, database: str, *, merge_on_read: bool = False) -> list:
    """merge_on_read: the table's compactions write deltas (however large they grow), and one follows every
    batch (a chain of deltas). The buckets each compaction wrote a delta for."""
    deltas = {"merge_on_read": True, "delta_share": 1e9} if merge_on_read else {}
    lake = Lake(spark, root, database, defaults=deltas)
    landed: list[Delivery] = []
    for n, batch in enumerate(scenario.batches):
        lake.write([d.line() for d in batch.deliveries], name=batch.file)
        lake.land()
        landed += batch.deliveries
        events = model_events(landed)
        check_view(lake, events, f"view after landing batch {n}")
        if batch.compact_after or merge_on_read:
            lake.compact()
            check_view(lake, events, f"view after compacting batch {n}")
            check_base(lake, events, f"base after compacting batch {n}", deleted_values=DELETED_VALUES)
    return [m.stats.get("deltas_written") for m, _, _ in Compactor(spark, lake.config, TABLE).manifests.history()]


_phases = [Phase.explicit, Phase.reuse, Phase.generate]
if os.environ.get("LAKECOMPACT_PROPERTY_SHRINK") == "1":
    _phases.append(Phase.shrink)


def property_settings(default_examples: int):
    """Hypothesis settings of the Spark-backed property tests (LAKECOMPACT_PROPERTY_EXAMPLES, _SHRINK)."""
    return settings(
        max_examples=int(os.environ.get("LAKECOMPACT_PROPERTY_EXAMPLES", str(default_examples))),
        deadline=None,
        phases=_phases,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
    )
