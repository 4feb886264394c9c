"""Property test of the change feed (RFC-51) against the reference model, for random Debezium histories.

The histories, their batches and the compaction points come from tests/semantics/histories.py, the
expected tables from tests/semantics/reference.py. Every batch is landed twice, under two topics: one table
keeps the default `change_feed = "net"`, the other is configured with `change_feed = "events"`.

- NET, exactly: the feed of compaction version N is the difference between the reference view after
  compaction N-1 and after compaction N (inserted key -> 'i' with after, removed key -> 'd' with before,
  changed row -> 'u' with both, unchanged -> nothing), compared as a set of (version, op, key, before, after);
  replaying the whole feed from version 1 onto an empty dict gives the view.
- EVENTS, exactly: per version and key, the sequence of (op, before, after) that `expected_events` derives
  from the reference model (applied events in source order, a late event's TOAST values repairing the row of
  N-1 first); replaying the whole feed gives the view.

Knobs as in the semantics property test: LAKECOMPACT_PROPERTY_EXAMPLES=N (default 3 here),
LAKECOMPACT_PROPERTY_SHRINK=1.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given

from tests.semantics.histories import (
    COLUMNS,
    TABLE,
    Delivery,
    Scenario,
    actual_view,
    data,
    model_events,
    property_settings,
    same,
    scenarios,
)
from tests.semantics.reference import OP_RANK, expected_view, replay
from tests.support.databases import database_name
from tests.support.debezium import Topic
from tests.support.lake import Lake

EVENTS_TOPIC = "prop.public.evthings"  # the same history under a second topic: change_feed = "events"
EVENTS_TABLE = "public_evthings"

_examples = itertools.count()

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")


def events_line(d: Delivery) -> dict:
    """The delivery's kcat line under the second topic (same partition, offset and payload)."""
    t = Topic(EVENTS_TOPIC, COLUMNS, ["id"], partition=d.partition)
    c = d.change
    if d.tombstone:
        return t.tombstone({"id": c.id}, offset=d.offset)
    return t.event(c.op, {"id": c.id, **c.row}, c.position, ts_ms=c.ts_ms, offset=d.offset)


def image(row: dict | None):
    """A feed image (or a view row) as a hashable value; to_json leaves null fields out."""
    return None if row is None else tuple(sorted(data(row).items()))


def feed(lake: Lake, table: str) -> list[tuple]:
    """[(version, op, key, before, after)] in feed order."""
    lake.spark.catalog.refreshTable(f"`{lake.database}`.`{table}_changes`")
    rows = lake.rows(f"SELECT op, before, after, key, __version, __seq FROM `{lake.database}`.`{table}_changes` "
                     f"ORDER BY __version, __seq")
    return [(r["__version"], r["op"], r["key"]["id"], image(r.get("before")), image(r.get("after"))) for r in rows]


def expected_net(views: dict[int, dict]) -> set[tuple]:
    """{(version, op, key, before, after)} from the reference view after each compaction version."""
    out = set()
    for v in sorted(views):
        before, after = views.get(v - 1, {}), views[v]
        for k in before.keys() | after.keys():
            b, a = image(before.get(k)), image(after.get(k))
            if b is None:
                out.add((v, "i", k, None, a))
            elif a is None:
                out.add((v, "d", k, b, None))
            elif a != b:
                out.add((v, "u", k, b, a))
    return out


def check_net(actual: list[tuple], views: dict[int, dict]) -> None:
    got, want = set(actual), expected_net(views)
    assert len(got) == len(actual), f"the net feed repeats a change: {actual}"
    if got != want:
        lines = [f"  missing {x}" for x in sorted(want - got, key=repr)]
        lines += [f"  unexpected {x}" for x in sorted(got - want, key=repr)]
        raise AssertionError("net feed differs from the reference model:\n" + "\n".join(lines))
    check_replay(actual, views, "net")


def expected_events(landed: dict[int, list[dict]]) -> dict[tuple[int, int], list[tuple]]:
    """{(version, key): [(op, before, after)]} from the model events landed by each compaction version.

    Per key, the events of version N that sort after the key's last event of N-1 are applied, one per
    (position, op), in source order; the others are late or delivered again. The state after an applied event
    is the reference state of every event landed so far up to it, so a late event's TOAST values count. When
    late events alone changed the key's live row, a 'u' from the row of N-1 to the repaired row comes first.
    """
    def rank(e: dict) -> tuple:
        return e["position"], OP_RANK[e["op"]]

    def live(events: list[dict], k) -> tuple | None:
        state = replay(events).get(k)
        return None if state is None or state.deleted else image(state.row)

    out: dict[tuple[int, int], list[tuple]] = {}
    for v in sorted(landed):
        before_events, now = landed.get(v - 1, []), landed[v]
        for k in {e["id"] for e in now}:
            seen = [rank(e) for e in before_events if e["id"] == k]
            last = max(seen, default=None)
            mine = [e for e in now if e["id"] == k]
            applied = sorted({rank(e) for e in now[len(before_events):]
                              if e["id"] == k and (last is None or rank(e) > last)})
            changes = []
            state = live(before_events, k)
            if last is not None:
                repaired = live([e for e in mine if rank(e) <= last], k)
                if state is not None and repaired is not None and repaired != state:
                    changes.append(("u", state, repaired))
                state = repaired
            for r in applied:
                after = live([e for e in mine if rank(e) <= r], k)
                if state is None and after is not None:
                    changes.append(("i", None, after))
                elif state is not None:
                    changes.append(("d", state, None) if after is None else ("u", state, after))
                state = after
            if changes:
                out[(v, k)] = changes
    return out


def check_events(actual: list[tuple], landed: dict[int, list[dict]], views: dict[int, dict]) -> None:
    got: dict[tuple[int, int], list[tuple]] = {}
    for version, op, k, b, a in actual:
        got.setdefault((version, k), []).append((op, b, a))
    want = expected_events(landed)
    problems = [f"  version {v} key {k}:\n    got  {got.get((v, k))}\n    want {want.get((v, k))}"
                for v, k in sorted(got.keys() | want.keys()) if got.get((v, k)) != want.get((v, k))]
    assert not problems, "events feed differs from the reference model:\n" + "\n".join(problems)
    check_replay(actual, views, "events")


def check_replay(actual: list[tuple], views: dict[int, dict], granularity: str) -> None:
    """Applying the whole feed from version 1 onto an empty table gives the view after the last compaction."""
    replayed: dict = {}
    for _, op, k, _, after in actual:
        if op == "d":
            replayed.pop(k)
        else:
            replayed[k] = after
    last = views[max(views)] if views else {}
    assert replayed == {k: image(r) for k, r in last.items()}, f"replaying the {granularity} feed does not give the view"


def run_scenario(spark, root, scenario: Scenario, database: str) -> None:
    lake = Lake(spark, root, database)
    lake.configure(tables={EVENTS_TABLE: {"change_feed": "events"}})
    landed: list[Delivery] = []
    views: dict[int, dict] = {}  # compaction version -> reference view after it
    landed_events: dict[int, list[dict]] = {}  # compaction version -> model events landed by then
    version = 0
    for n, batch in enumerate(scenario.batches):
        lake.write([d.line() for d in batch.deliveries] + [events_line(d) for d in batch.deliveries], name=batch.file)
        lake.land()
        landed += batch.deliveries
        if batch.compact_after:
            reports = lake.compact()
            version += 1
            got = {r.table: r.version for r in reports}
            assert got == {TABLE: version, EVENTS_TABLE: version}, f"compaction {n}: versions {got}"
            landed_events[version] = model_events(landed)
            views[version] = expected_view(landed_events[version])
            same(actual_view(lake), views[version], f"net table: view after compacting batch {n}")
            view = {r["id"]: data(r) for r in lake.view(EVENTS_TABLE)}
            same(view, views[version], f"events table: view after compacting batch {n}")
    # a history that no compaction followed is checked too: no version, so both feeds must be empty
    check_net(feed(lake, TABLE), views)
    check_events(feed(lake, EVENTS_TABLE), landed_events, views)


@property_settings(3)
@given(scenario=scenarios())
def test_change_feeds_follow_the_reference_model(spark, tmp_path_factory, scenario):
    n = next(_examples)
    run_scenario(spark, tmp_path_factory.mktemp(f"feedprop{n}"), scenario, database_name())
