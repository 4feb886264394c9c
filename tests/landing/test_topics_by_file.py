"""A batch's files are planned with the topics their lines name at their start, as kcat writes them: each topic is
sampled from, and lands in one pass from, only the files that may hold it; a line that names another topic than
the one it starts with is quarantined, never landed where planning did not look (docs/design.md "Landing
protocol")."""

from __future__ import annotations

import json

import pytest

from lakecompact.landing import files
from lakecompact.landing.land import Landing
from tests.support.debezium import INT, TEXT, Topic
from tests.support.lake import quarantined

COLUMNS = [("id", INT), ("name", TEXT)]


def _kcat(line: dict) -> str:
    """A line as kcat -J writes it: no spaces, the topic first."""
    return json.dumps(line, separators=(",", ":"))


@pytest.fixture
def reads(monkeypatch) -> list[set[str]]:
    """The files each read of the batch took, by name."""
    seen: list[set[str]] = []
    read = files.read

    def spied(spark, ranges, unnumbered=None):
        seen.append({r.path.rsplit("/", 1)[1] for r in ranges})
        return read(spark, ranges, unnumbered)

    monkeypatch.setattr(files, "read", spied)
    return seen


def test_each_topic_of_its_own_files_is_sampled_and_landed_from_those_files_only(lake, reads, monkeypatch):
    careful = []
    monkeypatch.setattr(Landing, "_land_careful", lambda *args: careful.append(args))
    tables = {f"t{i}": Topic(f"pg.public.t{i}", COLUMNS, ["id"]) for i in range(3)}
    for name, topic in tables.items():
        lake.write([_kcat(topic.event("c", {"id": k, "name": f"{name}-{k}"}, k)) for k in range(3)], f"{name}.jsonl")
    report = lake.land()
    assert careful == []
    assert report.rows_out == {f"public_{name}": 3 for name in tables} and report.quarantined == {}
    own = [{"t0.jsonl"}, {"t1.jsonl"}, {"t2.jsonl"}]
    # sampled (one job of three reads), then one scan each (the scans side by side: in any order)
    assert reads[:3] == own and sorted(reads[3:], key=sorted) == own and len(reads) == 6
    for name in tables:
        assert lake.view(f"public_{name}", order="id") == [{"id": k, "name": f"{name}-{k}"} for k in range(3)]


def test_a_line_naming_another_topic_than_its_start_is_quarantined_and_the_rest_lands(lake):
    one, two = Topic("pg.public.one", COLUMNS, ["id"]), Topic("pg.public.two", COLUMNS, ["id"])
    lake.write([_kcat(one.event("c", {"id": 1, "name": "a"}, 1))], "one.jsonl")
    hidden = _kcat(two.event("c", {"id": 9, "name": "hidden"}, 9))
    # JSON with the key twice: the parse takes the last, so the line is of `pg.public.two` in a file planned as
    # holding only `pg.public.one`
    lake.write([_kcat(two.event("c", {"id": 2, "name": "b"}, 2)),
                '{"topic":"pg.public.one",' + hidden[1:]], "two.jsonl")
    report = lake.land()
    assert report.events_in == 3 and report.rows_out == {"public_one": 1, "public_two": 1}
    assert [row["__reason"] for row in quarantined(lake, None) + quarantined(lake, "public_two")
            + quarantined(lake, "public_one")] == [files.TOPIC_NAMED_TWICE]
    assert lake.view("public_two") == [{"id": 2, "name": "b"}]


def test_a_topic_that_cannot_land_in_one_pass_lands_the_careful_way_beside_those_that_do(lake, reads):
    keyed = Topic("pg.public.keyed", COLUMNS, ["id"])
    plain = Topic("pg.public.plain", COLUMNS, ["id"], with_schema=False)  # a new table without a schema
    lake.write([_kcat(keyed.event("c", {"id": 1, "name": "a"}, 1))], "keyed.jsonl")
    lake.write([_kcat(plain.event("c", {"id": 1, "name": "p"}, 1))], "plain.jsonl")
    report = lake.land()
    assert report.events_in == 2 and report.rows_out == {"public_keyed": 1, "public_plain": 0}
    assert report.quarantined == {"public_plain": 1}
    assert reads[2] == {"keyed.jsonl"}  # after sampling, the one-pass scan
    assert {"keyed.jsonl", "plain.jsonl"} in reads[3:]  # the careful way reads all
