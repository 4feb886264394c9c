"""Property test of the change feed (RFC-51) against the reference model, for random Debezium histories.

The histories, their batches and the compaction points come from tests/semantics/test_property.py, the
expected tables from tests/semantics/reference.py. Every batch is landed twice, under two topics: one table
keeps the default `change_feed = "net"`, the other is configured with `change_feed = "events"`.

- NET, exactly: the feed of compaction version N is the difference between the reference view after
  compaction N-1 and after compaction N (inserted key -> 'i' with after, removed key -> 'd' with before,
  changed row -> 'u' with both, unchanged -> nothing), compared as a set of (version, op, key, before, after);
  replaying the whole feed from version 1 onto an empty dict gives the view.
- EVENTS, the properties that always hold: per key within a version, in feed order, an 'i' only when the key
  is not live, a 'u' / 'd' only when it is; each before image is the previous event's after image (or the
  live row after compaction N-1); the key's state after its last event is its row in the view after
  compaction N (absent after a 'd'); a key that became live or stopped being live in N has an event in N.

Knobs as in the semantics property test: LAKECOMPACT_PROPERTY_EXAMPLES=N (default 3 here),
LAKECOMPACT_PROPERTY_SHRINK=1.
"""

from __future__ import annotations

import itertools
import os
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from tests.semantics.reference import expected_view
from tests.semantics.test_property import (
    COLUMNS,
    TABLE,
    Delivery,
    Scenario,
    _phases,
    actual_view,
    data,
    model_events,
    same,
    scenarios,
)
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
    replayed: dict = {}
    for _, op, k, _, after in actual:
        if op == "d":
            replayed.pop(k)
        else:
            replayed[k] = after
    last = views[max(views)] if views else {}
    assert replayed == {k: image(r) for k, r in last.items()}, "replaying the net feed does not give the view"


def check_events(actual: list[tuple], views: dict[int, dict]) -> None:
    problems = []
    for v in sorted(views):
        before_view, after_view = views.get(v - 1, {}), views[v]
        state = {k: image(r) for k, r in before_view.items()}  # key -> live image (absent: not live)
        seen = set()
        for version, op, k, b, a in actual:
            if version != v:
                continue
            seen.add(k)
            live = state.get(k)
            where = f"version {v} key {k}: {op} before={b} after={a} (live before: {live})"
            if op == "i":
                if live is not None or b is not None or a is None:
                    problems.append(f"{where}: insert of a live key or with wrong images")
                state[k] = a
            elif op in ("u", "d"):
                if live is None:
                    problems.append(f"{where}: {op} of a key that is not live")
                elif b != live:
                    problems.append(f"{where}: before image is not the previous after image")
                if op == "d":
                    if a is not None:
                        problems.append(f"{where}: delete with an after image")
                    state.pop(k, None)
                else:
                    state[k] = a
            else:
                problems.append(f"{where}: unknown op")
        # a key can only become live or stop being live through an applied event, which the feed shows
        for k in before_view.keys() ^ after_view.keys():
            if k not in seen:
                problems.append(f"version {v} key {k}: live {k in after_view} after compaction {v}, "
                                f"not before, but no event")
        for k in seen:
            if state.get(k) != image(after_view.get(k)):
                problems.append(f"version {v} key {k}: last event leaves {state.get(k)}, "
                                f"view after compaction {v} is {image(after_view.get(k))}")
    assert {v for v, *_ in actual} <= set(views), f"feed versions {sorted({v for v, *_ in actual})}"
    assert not problems, "events feed:\n" + "\n".join(problems)


def run_scenario(spark, root, scenario: Scenario, database: str) -> None:
    lake = Lake(spark, root, database)
    lake.configure(tables={EVENTS_TABLE: {"change_feed": "events"}})
    landed: list[Delivery] = []
    views: dict[int, dict] = {}  # compaction version -> reference view after it
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
            views[version] = expected_view(model_events(landed))
            same(actual_view(lake), views[version], f"net table: view after compacting batch {n}")
            view = {r["id"]: data(r) for r in lake.view(EVENTS_TABLE)}
            same(view, views[version], f"events table: view after compacting batch {n}")
    if not views:
        return
    check_net(feed(lake, TABLE), views)
    check_events(feed(lake, EVENTS_TABLE), views)


@settings(
    max_examples=int(os.environ.get("LAKECOMPACT_PROPERTY_EXAMPLES", "3")),
    deadline=None,
    phases=_phases,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario=scenarios())
def test_change_feeds_follow_the_reference_model(spark, tmp_path_factory, scenario):
    n = next(_examples)
    run_scenario(spark, tmp_path_factory.mktemp(f"feedprop{n}"), scenario, f"feedprop{n}_{uuid.uuid4().hex[:8]}")
