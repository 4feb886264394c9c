"""The lake against the source: the view row by row and column by column (and its column types), and the
increments against Kafka's messages.

The source side is read with SQL that prints the canonical form (tests.e2e.support.sources), the lake side with
Spark SQL in a UTC session; the view's column types are checked separately (`spark_type`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tests.e2e.support.columns import Column, Table, canonical, spark_type
from tests.e2e.support.common import say
from tests.e2e.support.sources import Moment, SourceDb


def canonical_view_rows(spark, database: str, table: str, columns: list[Column]) -> tuple[list[dict], dict[str, str]]:
    """The view's rows in canonical form (timestamps formatted by Spark in the UTC session) and its column types."""
    spark.catalog.refreshTable(f"`{database}`.`{table}`")
    frame = spark.table(f"`{database}`.`{table}`")
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    rows = [r.asDict() for r in frame.selectExpr(*canonical_select(columns, types)).collect()]
    return [{c.name: canonical(c, row.get(c.name)) for c in columns} for row in rows], types


def canonical_select(columns: list[Column], types: dict[str, str]) -> list[str]:
    """The SELECT expressions that read the columns (of these view types) in canonical form."""
    exprs = []
    for c in columns:
        if c.name not in types:
            continue
        base = c.kind.split(":")[0]
        if types[c.name] == "timestamp":
            exprs.append(f"date_format(`{c.name}`, 'yyyy-MM-dd HH:mm:ss.SSSSSS') AS `{c.name}`")
        elif base in ("dec", "date"):
            exprs.append(f"CAST(`{c.name}` AS STRING) AS `{c.name}`")
        else:
            exprs.append(f"`{c.name}`")
    return exprs


def compare_as_of(spark, config, db: SourceDb, moments: list[Moment], stage: str) -> list[Comparison]:
    """Each table at each moment against `sql --as-of <moment>` (views/read.run_sql, as the command runs it) of
    the table's columns at that moment, read in canonical form."""
    import io

    from lakecompact.views.read import run_sql

    results = []
    for moment in moments:
        for table in moment.tables:
            lake_table = db.lake_table(table.name)
            types = {f.name: f.dataType.simpleString() for f in spark.table(f"`{config.database}`.`{lake_table}`").schema}
            out = io.StringIO()
            run_sql(spark, config, f"SELECT {', '.join(canonical_select(list(table.columns), types))} FROM {lake_table}",
                    out, as_of=moment.clock)
            lake_rows = [{c.name: canonical(c, row.get(c.name)) for c in table.columns}
                         for row in map(json.loads, out.getvalue().splitlines())]
            source_rows = moment.rows[table.name]
            comparison = Comparison(f"{stage} as of {moment.clock}", db.kind, table, lake_table, len(source_rows),
                                    len(lake_rows))
            compare_rows(table, source_rows, lake_rows, comparison)
            say(f"{comparison.stage}: {config.database}.{lake_table} {'equals' if comparison.equal else 'DIFFERS FROM'}"
                f" {db.kind} {db.qualified(table.name)}: {len(source_rows)} source rows, {len(lake_rows)} rows")
            results.append(comparison)
    return results


@dataclass
class Comparison:
    """One table of the lake against its source table at one stage of a scenario."""

    stage: str
    db: str
    table: Table
    lake_table: str
    source_rows: int
    view_rows: int
    type_problem: str | None = None
    problems: list[str] = field(default_factory=list)  # keyed tables: missing, extra, differing keys
    missing: Counter = field(default_factory=Counter)  # keyless tables: source rows (as JSON) not in the view
    extra: Counter = field(default_factory=Counter)  # ... view rows not in the source

    @property
    def equal(self) -> bool:
        return not (self.type_problem or self.problems or self.missing or self.extra)

    def describe(self) -> str:
        text = (f"{self.stage}: {self.lake_table} vs {self.db} {self.table.name} "
                f"({self.source_rows} source rows, {self.view_rows} view rows)")
        if self.type_problem:
            text += f"\n  types: {self.type_problem}"
        text += "".join(f"\n  {p}" for p in self.problems[:12])
        if len(self.problems) > 12:
            text += f"\n  ... {len(self.problems)} problems in all"
        if self.missing:
            text += f"\n  missing from the view: {[_short(r, 160) for r in list(self.missing.elements())[:5]]}"
        if self.extra:
            text += f"\n  in the view only: {[_short(r, 160) for r in list(self.extra.elements())[:5]]}"
        return text


def row_json(table: Table, row: dict) -> str:
    return json.dumps([row[c.name] for c in table.columns], default=str, ensure_ascii=False)


def compare_rows(table: Table, source: list[dict], lake: list[dict], comparison: Comparison) -> Comparison:
    """Row by row: the same keys and every value equal; keyless: the same multiset of rows."""
    names = [c.name for c in table.columns]
    src = [{c.name: canonical(c, r.get(c.name)) for c in table.columns} for r in source]
    if not table.key:
        a = Counter(row_json(table, r) for r in src)
        b = Counter(row_json(table, r) for r in lake)
        comparison.missing, comparison.extra = a - b, b - a
        return comparison
    by_key_src = {tuple(r[k] for k in table.key): r for r in src}
    by_key_lake: dict[tuple, dict] = {}
    for r in lake:
        k = tuple(r[k] for k in table.key)
        if k in by_key_lake:
            comparison.problems.append(f"key {k} twice in the view")
        by_key_lake[k] = r
    for k in sorted(set(by_key_src) - set(by_key_lake), key=repr):
        comparison.problems.append(f"missing from the view: key {k}")
    for k in sorted(set(by_key_lake) - set(by_key_src), key=repr):
        comparison.problems.append(f"in the view, not in the source: key {k} {_short(by_key_lake[k])}")
    for k in sorted(set(by_key_src) & set(by_key_lake), key=repr):
        a, b = by_key_src[k], by_key_lake[k]
        bad = [n for n in names if a[n] != b[n]]
        if bad:
            comparison.problems.append(
                f"key {k}: " + "; ".join(f"{n}: source {_short(a[n])} != view {_short(b[n])}" for n in bad))
    return comparison


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) and value.startswith("[") else repr(value)
    return text if len(text) <= limit else f"{text[:limit - 20]}...({len(text)} chars)"


def compare_with_source(spark, config, db: SourceDb, tables: list[Table], stage: str) -> list[Comparison]:
    """Every table's view against the source table (values, and the column types docs/design.md "Schema extractor" asks for)."""
    results = []
    for table in tables:
        lake_table = db.lake_table(table.name)
        source_rows = db.rows(table)
        lake_rows, types = canonical_view_rows(spark, config.database, lake_table, list(table.columns))
        comparison = Comparison(stage, db.kind, table, lake_table, len(source_rows), len(lake_rows))
        expected = {c.name: spark_type(c.kind, db.connector_type) for c in table.columns}
        actual = {c.name: types.get(c.name) for c in table.columns}
        if actual != expected:
            comparison.type_problem = f"{actual} != expected {expected}"
        compare_rows(table, source_rows, lake_rows, comparison)
        verdict = "equals" if comparison.equal else "DIFFERS FROM"
        say(f"{stage}: {config.database}.{lake_table} {verdict} {db.kind} {db.qualified(table.name)}: "
            f"{comparison.source_rows} source rows, {comparison.view_rows} view rows, {len(table.columns)} columns")
        results.append(comparison)
    return results


def assert_equal(comparisons: list[Comparison], *, keyed: bool | None = None) -> int:
    """Every comparison (optionally only of keyed or keyless tables) found the view equal; returns rows compared."""
    picked = [c for c in comparisons if keyed is None or bool(c.table.key) == keyed]
    assert picked, "nothing was compared"
    bad = [c for c in picked if not c.equal]
    assert not bad, "the view differs from the source:\n" + "\n".join(c.describe() for c in bad)
    total = sum(c.source_rows for c in picked)
    say(f"{len(picked)} comparisons, {total} rows equal: "
        + ", ".join(f"{c.stage}/{c.table.name}={c.source_rows}" for c in picked))
    return total


def increments_landed_once(spark, config, db: SourceDb, tables: list[Table], messages: list[dict]) -> int:
    """Every non-tombstone Kafka message is in the lake's increments (pending or archived) exactly once."""
    from lakecompact.lake.catalog import Catalog

    catalog = Catalog(spark, config)
    total = 0
    for table in tables:
        name = db.lake_table(table.name)
        paths, storage = catalog.paths(name), catalog.storage
        batches = [f"{root}/{hour}/{batch}"
                   for root in (paths.increments, f"{paths.root}/archive")
                   for hour in storage.list_names(root) if hour.startswith("hour=")
                   for batch in storage.list_names(f"{root}/{hour}") if batch.startswith("batch=")]
        landed = Counter()
        if batches:
            frame = spark.read.parquet(*batches).select("__kafka_partition", "__kafka_offset")
            landed.update((r["__kafka_partition"], r["__kafka_offset"]) for r in frame.collect())
        wanted = Counter((m["partition"], m["offset"]) for m in messages
                         if m["topic"] == db.topic(table.name) and m["payload"] is not None)
        twice = {k: n for k, n in landed.items() if n > 1}
        assert not twice, f"{name}: events landed more than once: {list(twice.items())[:5]}"
        assert set(landed) == set(wanted), (
            f"{name}: landed offsets differ from Kafka's: missing {sorted(set(wanted) - set(landed))[:5]}, "
            f"extra {sorted(set(landed) - set(wanted))[:5]}"
        )
        total += len(landed)
    return total
