"""A topic whose batch holds several versions of its value schema (a table that gained columns while it was
captured) lands in one pass when the planner saw those versions in the lines it counted (every HINT_EVERY-th) or
the batch's first lines show them, and they parse into one struct; the table evolves through them in the order
they come, as the careful way evolves it. A version with a column of another type, or a batch whose versions
neither show (a rerun plans without them), lands the careful way, exactly the same (docs/design.md "Landing
protocol"). A Kafka batch's versions are sampled from each partition's last messages too:
tests/e2e/test_kafka_schema_versions.py."""

from __future__ import annotations

import json

import pytest

from lakecompact.lake.catalog import Catalog
from lakecompact.landing import decode, files
from tests.support.debezium import BIGINT, INT, TEXT, Topic

TABLE = "public_items"


@pytest.fixture(autouse=True)
def every_line_hinted(monkeypatch):
    """The planner looks at every line's value schema (it samples every HINT_EVERY-th line: these batches are small)."""
    monkeypatch.setattr(files, "HINT_EVERY", 1)


def _kcat(line: dict) -> str:
    return json.dumps(line, separators=(",", ":"))


def _three_versions(lake) -> list[dict]:
    """Events of three versions, one after the other over two files; the second and third each add a column."""
    items = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    first = [items.event("c", {"id": k, "name": f"n{k}"}, 10 + k) for k in range(3)]
    items.columns.append(("score", INT))
    second = [items.event("u", {"id": 1, "name": "n1", "score": 5}, 20),
              items.event("c", {"id": 3, "name": "n3", "score": 7}, 21)]
    items.columns.append(("note", TEXT))
    third = [items.event("u", {"id": 3, "name": "n3", "score": 8, "note": "x"}, 30),
             items.event("d", {"id": 0, "name": "n0", "score": None, "note": None}, 31)]
    lake.write([_kcat(e) for e in first + second], "a.jsonl")
    lake.write([_kcat(e) for e in third], "b.jsonl")
    # a view's row as `lake.view` gives it: its null columns left out
    return [{"id": 1, "name": "n1", "score": 5}, {"id": 2, "name": "n2"}, {"id": 3, "name": "n3", "score": 8, "note": "x"}]


@pytest.mark.parametrize(("planned", "sampled"), [(True, False), (False, True), (False, False)],
                         ids=["versions planned", "versions sampled", "neither"])
def test_three_schema_versions_in_a_batch_land_in_one_pass_and_as_the_careful_way(lake, careful_calls, monkeypatch,
                                                                                  planned, sampled):
    if not planned:  # as a rerun of the batch plans it: no versions noted
        monkeypatch.setattr(files, "HINTED_SCHEMAS", 0)
    if not sampled:  # the first lines show the first version only
        monkeypatch.setattr(decode, "SAMPLE_LINES", 1)
    expected = _three_versions(lake)
    report = lake.land()
    assert report.events_in == 7 and report.rows_out == {TABLE: 7} and report.quarantined == {}
    assert careful_calls == ([] if planned or sampled else ["careful"])
    assert lake.view(TABLE, order="id") == expected
    schema = Catalog(lake.spark, lake.config).schema(TABLE)
    # created from the first version, then a change for each later one
    assert [f.name for f in schema.fields] == ["id", "name", "score", "note"] and schema.version == 3
    lake.compact()
    assert lake.view(TABLE, order="id") == expected


def test_a_version_whose_column_changes_type_lands_the_careful_way(lake, careful_calls):
    items = Topic("pg.public.items", [("id", INT), ("score", INT)], ["id"])
    lines = [items.event("c", {"id": 1, "score": 1}, 10)]
    items.columns[1] = ("score", BIGINT)  # a widening: the same column decodes from another wire type
    lines.append(items.event("c", {"id": 2, "score": 2**40}, 20))
    lake.write([_kcat(e) for e in lines])
    report = lake.land()
    assert report.rows_out == {TABLE: 2} and report.quarantined == {}
    assert careful_calls == ["careful"]
    assert lake.view(TABLE, order="id") == [{"id": 1, "score": 1}, {"id": 2, "score": 2**40}]


@pytest.mark.parametrize("big", [False, True], ids=["read whole", "streamed"])
def test_the_planner_sees_each_files_new_value_schemas_in_the_order_they_come(lake, monkeypatch, big):
    if big:
        monkeypatch.setattr(files, "WHOLE_FILE_BYTES", 0)
    items = Topic("pg.public.items", [("id", INT)], ["id"])
    first = json.dumps(items.value_schema(), separators=(",", ":"))
    lines = [_kcat(items.event("c", {"id": 1}, 1))]
    items.columns.append(("name", TEXT))
    second = json.dumps(items.value_schema(), separators=(",", ":"))
    lines += [_kcat(items.event("c", {"id": k, "name": "b"}, k)) for k in (2, 3)]
    size = lake.write(lines, "a.jsonl").stat().st_size
    ranges = files.plan(lake.spark, Catalog(lake.spark, lake.config).storage, lake.config.source.paths, {})
    assert [r.value_schemas for r in ranges] == [((items.name, first), (items.name, second))]
    lake.write([_kcat(items.event("c", {"id": 4, "name": "d"}, 4))], "a.jsonl")
    landed = {ranges[0].path: {"lines": 3, "size": size}}
    ranges = files.plan(lake.spark, Catalog(lake.spark, lake.config).storage, lake.config.source.paths, landed)
    # the lines landed before are not looked at: a streamed file's are not numbered here, so it gives none
    assert [(r.start, r.value_schemas) for r in ranges] == [(3, () if big else ((items.name, second),))]


def test_the_planner_looks_at_every_hint_every_th_line_of_a_file(lake, monkeypatch):
    monkeypatch.setattr(files, "HINT_EVERY", 2)
    items = Topic("pg.public.items", [("id", INT)], ["id"])
    lines = [_kcat(items.event("c", {"id": 0}, 0))]
    items.columns.append(("name", TEXT))
    lines.append(_kcat(items.event("c", {"id": 1, "name": "b"}, 1)))  # line 1: not looked at
    items.columns.append(("note", TEXT))
    lines.append(_kcat(items.event("c", {"id": 2, "name": "c", "note": "d"}, 2)))
    lake.write(lines)
    ranges = files.plan(lake.spark, Catalog(lake.spark, lake.config).storage, lake.config.source.paths, {})
    assert [[json.loads(text)["fields"][1]["fields"][-1]["field"] for _, text in r.value_schemas]
            for r in ranges] == [["id", "note"]]
