"""Real Debezium output, landed through the files source: the view shows what the source table held.

tests/fixtures/debezium/{postgres,mariadb}.jsonl are kcat -J lines that Debezium 3.5 (PostgreSQL connector
with pgoutput, MariaDB connector; JsonConverter with schemas) wrote in the end-to-end tests
(tests/e2e/test_postgres_to_lake.py and test_mariadb_to_lake.py, run with
LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES=1): the whole history of a sample of keys of `accounts` and `orders`, and
all of the keyless `audit` table (and, in postgres_names.jsonl, a table with columns named `key` and
`payload`). The *.expected.json files hold the rows the source tables had for those
keys at the end (read from the databases, not from lakecompact), the view's column types docs/design.md "Schema extractor" asks for,
and the number of lines landed by the run's first `land`.

The test lands the lines of the run's first batch, compacts, lands the rest and compares the view (over the
base and the pending increments) with the expected rows, without Kafka or databases.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e import support
from tests.support.databases import database_name
from tests.support.lake import Lake

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "debezium"
CONNECTORS = ["postgres", "mariadb"]


def _load(name: str) -> tuple[list[str], dict]:
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    return lines, expected


def _table(name: str, spec: dict) -> support.Table:
    return support.Table(name, tuple(support.Column(c, kind) for c, kind in spec["columns"]), tuple(spec["key"]))


def _compare(lake: Lake, expected: dict, stage: str) -> list[support.Comparison]:
    results = []
    for name, spec in sorted(expected["tables"].items()):
        table = _table(name, spec)
        rows, types = support.canonical_view_rows(lake.spark, lake.database, name, list(table.columns))
        comparison = support.Comparison(stage, expected["connector"], table, name, len(spec["rows"]), len(rows))
        actual_types = {c.name: types.get(c.name) for c in table.columns}
        if actual_types != spec["types"]:
            comparison.type_problem = f"{actual_types} != expected {spec['types']}"
        results.append(support.compare_rows(table, spec["rows"], rows, comparison))
    return results


@pytest.fixture(scope="module", params=CONNECTORS)
def landed(request, spark, tmp_path_factory):
    """The fixture of one connector landed in two batches, with the comparisons after each step."""
    name = request.param
    lines, expected = _load(name)
    lake = Lake(spark, tmp_path_factory.mktemp(f"real_{name}"), database_name())
    first = expected["first_batch_lines"]
    lake.write(lines[:first], name=f"{name}.jsonl", mode="w")
    first_report = lake.land()
    lake.compact()
    lake.write(lines[first:], name=f"{name}.jsonl", mode="a")
    second_report = lake.land()
    comparisons = _compare(lake, expected, "base of the first batch + increments of the rest")
    return {"name": name, "lines": lines, "expected": expected, "reports": (first_report, second_report),
            "comparisons": comparisons}


def _check(comparisons: list[support.Comparison]) -> None:
    """Every comparison equal, and at least one made: a test that selects no table checks nothing."""
    assert comparisons, "no table of the fixture was compared"
    bad = [c for c in comparisons if not c.equal]
    assert not bad, "\n".join(c.describe() for c in bad)


def test_fixture_holds_every_kind_of_event(landed):
    ops = support.op_counts([json.loads(line) for line in landed["lines"]])
    assert ops == Counter(landed["expected"]["events"])
    for needed in ("r", "c", "u", "d", "tombstone"):
        assert ops[needed] > 0, ops
    if landed["name"] == "postgres":
        assert ops["toast placeholder"] > 0, ops
    assert 120 <= len(landed["lines"]) <= 600


def test_every_line_is_landed_and_none_quarantined(landed):
    first, second = landed["reports"]
    events = sum(1 for line in landed["lines"] if json.loads(line)["payload"] is not None)
    assert not first.quarantined and not second.quarantined
    assert sum(first.rows_out.values()) + sum(second.rows_out.values()) == events


def test_tables_with_a_key_equal_the_source(landed):
    _check([c for c in landed["comparisons"] if c.table.key])


def test_table_without_a_key_equals_the_source(landed):
    """The fixture's `audit` has rows equal in every column: in one batch, and one repeating a row of the first."""
    _check([c for c in landed["comparisons"] if not c.table.key])


def test_columns_named_key_and_payload(lake):
    """postgres_names.jsonl: the snapshot of a table whose columns are named id, key and payload."""
    lines, expected = _load("postgres_names")
    lake.write(lines, name="names.jsonl", mode="w")
    lake.land()
    _check(_compare(lake, expected, "landed"))
