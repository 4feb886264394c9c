"""Every template in sql_templates/ renders to SQL that sqlglot parses as Hive and as Spark SQL."""

from __future__ import annotations

import re

import pytest
import sqlglot
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)
from sqlglot import exp

from lakecompact import sql
from lakecompact.compaction.changes import _compares_as_value
from lakecompact.compaction.spread import bucket_spread
from lakecompact.lake.model import META_COLUMNS
from lakecompact.lake.partitions import DELTA_BUCKETS_FROM
from lakecompact.lake.row_history import BEGINS, history_context
from lakecompact.lake.semantics import semantics_context
from tests.support.schemas import KEYLESS, SCHEMA

LOCATION = "file:/lake/db/orders/base"


def contexts() -> dict[str, dict]:
    semantics = semantics_context(SCHEMA, base="`db`.`orders_base`", increments="`db`.`orders_increments`", live_only=True)
    return {
        "create_database.sql.j2": {"database": "db", "location": "file:/lake/db"},
        "create_table.sql.j2": {
            "database": "db", "table": "orders_base", "columns": SCHEMA.columns + list(META_COLUMNS),
            "partitions": [("__bucket", "INT")], "location": LOCATION, "properties": {"lakecompact.key": "id"},
        },
        "drop_partitions.sql.j2": {"database": "db", "table": "orders_increments",
                                   "specs": [[("__hour", "2026112105"), ("__batch", 3)]]},
        "add_columns.sql.j2": {"database": "db", "table": "orders_base", "columns": [("added", "BIGINT")]},
        "create_view.sql.j2": {"database": "db", "view": "orders", **semantics},
        "create_view_as.sql.j2": {"name": "db.orders", "query": "SELECT 1 AS x"},
        "latest_rows.sql.j2": {**semantics, "live_only": False},
        "version_rows.sql.j2": {
            **semantics, "live_only": False, "mark_carried": True, "bucket_count": 8, "chunk": None,
            "marker_bucket": -1, "truncated": False, "tombstone_cutoff": "2026-11-24T10:00:00+00:00",
            "partitions": 2, "written": SCHEMA.column_names + [name for name, _ in META_COLUMNS] + ["__bucket"],
            "deltas": (1, 5), "delta_offset": DELTA_BUCKETS_FROM,
            "spread": bucket_spread(8, (DELTA_BUCKETS_FROM + 1, DELTA_BUCKETS_FROM + 5), DELTA_BUCKETS_FROM),
            "part": "all",
        },
        "shadowed_rows.sql.j2": {"kept": "k", "delta": "d", "touched": "t", "key": ["id"]},
        "touched_keys.sql.j2": {"events": "i", "key": ["id"]},
        "base_rows.sql.j2": {"whole": "w", "shadowed": "s", "delta": "d", "key": ["id"],
                             "names": SCHEMA.column_names + [name for name, _ in META_COLUMNS] + ["__batch", "__origins"]},
        "appended_rows.sql.j2": semantics_context(KEYLESS, base="b", increments="i", live_only=True),
        "change_net.sql.j2": {"before": "b", "after": "a", "key": ["id"], "columns": SCHEMA.column_names},
        "change_events.sql.j2": {**semantics, "live_only": False, "repaired": "r"},
        "late_events.sql.j2": {"base": "b", "increments": "i", "key": ["id"]},
        "history_rows.sql.j2": history_context(SCHEMA, events="`db`.`orders_events`", increments="`db`.`orders_increments`"),
        "history_versions_added.sql.j2": {"written": "w", "kept": "k", "key": ["id"], "begins": BEGINS},
        "drop_table.sql.j2": {"database": "db", "table": "orders_changes"},
        "use_database.sql.j2": {"database": "db"},
        "verify_rows.sql.j2": {"rows": "r", "key": ["id"], "bucket_count": 256,
                               "columns": [("id", "text"), ("at", "timestamp"), ("ok", "boolean"), ("amount", "decimal"),
                                           ("ratio", "float"), ("raw", "binary"), ("tags", "json")]},
        "verify_buckets.sql.j2": {"source": "s", "lake": "l"},
        "verify_keys.sql.j2": {"source": "s", "lake": "l", "buckets": [3, 17], "names": ["id", "note"], "keyless": False},
        "verify_positions.sql.j2": {"base": "b", "increments": "i", "key": [("id", "text"), ("at", "timestamp")],
                                    "keys": "k"},
        "repair_returned.sql.j2": {"events": "e", "asked": "a", "key": [("id", "text"), ("at", "timestamp")]},
    }


# run on the source database, not Spark: each form parses in its database's dialect (a condition inside a query;
# a script statement by statement)
SOURCE_DATABASE = {
    "source_log_position.sql.j2": [({"kind": "postgresql"}, "postgres"),
                                   ({"kind": "binlog", "binary_log_status": False}, "mysql"),
                                   ({"kind": "binlog", "binary_log_status": True}, "mysql")],
    "debezium_signal.sql.j2": [({"signal_table": '"public"."debezium_signal"'}, "postgres")],
    "repair_keys.sql.j2": [({"kind": "postgresql", "columns": ['"id"'], "keys": [["1"], ["it's"]]}, "postgres"),
                           ({"kind": "mariadb", "columns": ["a", "b"], "keys": [["1", "x\\y"]]}, "mysql")],
    "repair_delete.sql.j2": [
        ({"kind": "postgresql", "table": '"s"."t"', "columns": ['"id"', '"raw"', '"note"'],
          "values": [("1", "number"), ("AAE=", "binary"), (None, "text")], "condition": '"id" IN (\'1\')'}, "postgres"),
        ({"kind": "mariadb", "table": "s.t", "columns": ["id", "raw"], "values": [("1", "boolean"), ("AAE=", "binary")],
          "condition": "id IN ('1')"}, "mysql")],
}


def _source_statements(template: str, rendered: str) -> list[str]:
    if template == "repair_keys.sql.j2":
        return [f"SELECT 1 FROM t WHERE {rendered}"]
    return [part.strip() for part in rendered.split(";\n") if part.strip()]


def test_every_template_has_a_context():
    assert set(sql.template_names()) == set(contexts()) | set(SOURCE_DATABASE)


@pytest.mark.parametrize(("template", "context", "dialect"),
                         [(t, c, d) for t, forms in SOURCE_DATABASE.items() for c, d in forms])
def test_a_source_database_template_parses_in_its_dialect(template, context, dialect):
    rendered = sql.render(template, **context)
    for statement in _source_statements(template, rendered):
        assert sqlglot.parse_one(statement, read=dialect) is not None, statement
    if template != "repair_delete.sql.j2":
        assert rendered.strip() == rendered and ";" not in rendered  # one statement, as JDBC takes it


def test_a_key_condition_quotes_each_value_as_its_database_does():
    assert sql.render("repair_keys.sql.j2", **SOURCE_DATABASE["repair_keys.sql.j2"][0][0]) == \
        """"id" IN ('1', 'it''s')"""
    assert sql.render("repair_keys.sql.j2", **SOURCE_DATABASE["repair_keys.sql.j2"][1][0]) == \
        "(a, b) IN (('1', 'x\\\\y'))"


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_the_latest_event_landed_without_keys_parses(dialect):
    rendered = sql.render("verify_positions.sql.j2", **{**contexts()["verify_positions.sql.j2"], "keys": None})
    assert sqlglot.parse_one(rendered, read=dialect) is not None
    assert "__key" not in rendered and "max(__position) AS __position FROM events" in rendered


@pytest.mark.parametrize("template", sorted(contexts()))
@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_template_parses(template, dialect):
    rendered = sql.render(template, **contexts()[template])
    parsed = sqlglot.parse_one(rendered, read=dialect)
    assert parsed is not None
    if template not in ("drop_partitions.sql.j2", "use_database.sql.j2"):
        # sqlglot understands these fully; the partition statements it keeps as commands
        assert not isinstance(parsed, exp.Command), f"{template} parsed only as an opaque command"


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_verify_of_a_keyless_table_parses_and_compares_whole_rows(dialect):
    keyless = {**contexts()["verify_keys.sql.j2"], "keyless": True}
    rendered = sql.render("verify_keys.sql.j2", **keyless)
    assert sqlglot.parse_one(rendered, read=dialect) is not None
    assert "GROUP BY __values" in rendered and "__key" not in rendered
    rows = sql.render("verify_rows.sql.j2", **{**contexts()["verify_rows.sql.j2"], "key": []})
    assert sqlglot.parse_one(rows, read=dialect) is not None
    assert "CAST(NULL AS STRING) AS __key" in rows and "pmod(__hash, 256) AS __bucket" in rows


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_version_rows_without_a_truncate_group_by_bucket_and_parse(dialect):
    rendered = sql.render("version_rows.sql.j2", **{**contexts()["version_rows.sql.j2"], "no_truncate": True})
    assert sqlglot.parse_one(rendered, read=dialect) is not None
    # distributed once, by bucket, before the rows are grouped; the write adds no shuffle of its own
    assert rendered.count("REPARTITION(") == 1
    assert re.search(r"REPARTITION\(2, __bucket_of\).*GROUP BY `id`, __bucket_of", rendered, re.DOTALL)


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_the_bucket_clause_parses(dialect):
    rendered = sql.render("clauses/bucket.sql.j2", key=["id", "region"], bucket_count=8)
    assert _collapse(rendered) == "pmod(xxhash64(`id`, `region`), 8)"
    assert sqlglot.parse_one(rendered, read=dialect) is not None


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_create_table_golden():
    rendered = sql.render("create_table.sql.j2", **contexts()["create_table.sql.j2"])
    assert _collapse(rendered).startswith(
        "CREATE EXTERNAL TABLE IF NOT EXISTS `db`.`orders_base` ( `id` INT, `note` STRING, `tags` ARRAY<STRING>,"
        " `amount` DECIMAL(38,2), `__op` STRING,"
    )
    assert _collapse(rendered).endswith(
        "PARTITIONED BY (`__bucket` INT) STORED AS PARQUET LOCATION 'file:/lake/db/orders/base'"
        " TBLPROPERTIES ('lakecompact.key' = 'id')"
    )


def test_hostile_identifiers_are_refused():
    from lakecompact.errors import SchemaError

    with pytest.raises(SchemaError, match="not usable"):
        sql.render("add_columns.sql.j2", database="db", table="t", columns=[("x` STRING) --", "INT")])
    with pytest.raises(SchemaError, match="not usable"):
        sql.render("create_database.sql.j2", database="db; DROP TABLE x", location="file:/x")


def test_string_literals_are_escaped():
    rendered = sql.render("create_table.sql.j2", **{**contexts()["create_table.sql.j2"], "properties": {"k": "it's \\ fine"}})
    assert sqlglot.parse_one(rendered, read="spark").sql(dialect="spark").count("TBLPROPERTIES") == 1
    assert "'it\\'s \\\\ fine'" in rendered


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_compaction_marks_the_carried_rows_and_the_view_does_not(dialect):
    context = {**contexts()["latest_rows.sql.j2"], "live_only": False}
    marked = sqlglot.parse_one(sql.render("latest_rows.sql.j2", **{**context, "mark_carried": True}), read=dialect)
    producers = [select for select in marked.find_all(exp.Select) if select.selects
                 and select.selects[-1].alias_or_name == "__carried" and not isinstance(select.selects[-1], exp.Column)]
    # the resolved rows and the truncate marker (FALSE), the base rows of untouched keys (TRUE)
    assert sorted(select.selects[-1].this.sql() for select in producers) == ["FALSE", "FALSE", "TRUE"]
    [carried] = [select for select in producers if select.selects[-1].this.sql() == "TRUE"]
    assert carried.find(exp.From).this.name == "base"
    assert "__carried" not in sql.render("latest_rows.sql.j2", **context)
    assert "__carried" not in sql.render("create_view.sql.j2", **contexts()["create_view.sql.j2"])


@pytest.mark.parametrize("template", ["latest_rows.sql.j2", "version_rows.sql.j2", "appended_rows.sql.j2"])
def test_a_compaction_without_truncates_looks_for_none(template):
    """no_truncate (compaction knows its inputs hold no truncate): the last truncate is a constant, no scan of the
    base or the increments looks for one, and no window asks which of a key's rows came after it."""
    context = {**contexts()[template], "live_only": False}

    def truncation_reads(no_truncate: bool) -> tuple[list[str], int]:
        parsed = sqlglot.parse_one(sql.render(template, **{**context, "no_truncate": no_truncate}), read="spark")
        [truncation] = [cte for cte in parsed.find_all(exp.CTE) if cte.alias == "truncation"]
        return sorted(table.name for table in truncation.find_all(exp.Table)), len(list(parsed.find_all(exp.Window)))

    assert truncation_reads(no_truncate=False)[0] == ["base", "increments"]
    assert truncation_reads(no_truncate=True) == ([], 0)
    if template != "appended_rows.sql.j2":
        assert truncation_reads(no_truncate=False)[1] == 1  # the window over each key's history


@pytest.mark.parametrize("template", ["change_net.sql.j2", "change_events.sql.j2"])
def test_the_feeds_compare_images_as_values_only_where_that_is_exact(template):
    """An update whose images are equal is left out of the feed: compared as structs when every column's `=` is
    exact, else as JSON texts (a map has no equality; 0.0 = -0.0 though the values differ)."""
    def comparison(comparable: bool) -> exp.Expression:
        rendered = sql.render(template, **{**contexts()[template], "comparable": comparable})
        return sqlglot.parse_one(rendered, read="spark").args["where"]

    as_values, as_texts = comparison(True), comparison(False)
    assert as_values.find(exp.NullSafeEQ) is not None and "to_json" not in as_values.sql(dialect="spark").lower()
    assert as_texts.find(exp.NullSafeEQ) is None and as_texts.sql(dialect="spark").lower().count("to_json") == 2
    nested = StructType([StructField("a", ArrayType(StringType())), StructField("t", TimestampType())])
    assert all(_compares_as_value(t) for t in (IntegerType(), StringType(), nested, ArrayType(nested)))
    assert not any(_compares_as_value(t) for t in (
        DoubleType(), MapType(StringType(), IntegerType()), ArrayType(DoubleType()),
        StructType([StructField("m", MapType(StringType(), StringType()))]),
    ))


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_a_version_splits_into_resolved_rows_with_their_before_image_and_carried_rows(dialect):
    """The net feed of a change without a truncate is taken from the version's resolved rows, each with its key's
    live base row (`__before`), instead of pairing the base before and after again."""
    context = {**contexts()["version_rows.sql.j2"], "no_truncate": True, "tombstone_cutoff": None}

    def outer(part: str, with_before: bool) -> list[list[str]]:
        parsed = sqlglot.parse_one(sql.render("version_rows.sql.j2", **{**context, "part": part, "with_before": with_before}),
                                   read=dialect)
        top = [parsed.left, parsed.right] if isinstance(parsed, exp.Union) else [parsed]
        return [[name for name in (p.alias_or_name for p in select.selects) if name in ("__bucket", "__before")]
                + [select.args["where"].this.sql()] for select in top]

    assert outer("resolved", with_before=True) == [["__bucket", "__before", "NOT __carried"]]
    assert outer("carried", with_before=True) == [["__bucket", "__carried"]]
    assert outer("all", with_before=False) == [["__bucket", "NOT __carried"], ["__bucket", "__carried"]]
    resolved = sql.render("version_rows.sql.j2", **{**context, "part": "resolved", "with_before": True})
    # one base row per key at most: the before image's aggregate takes the live one
    assert re.search(r"WHEN __from_base AND NOT __deleted THEN named_struct\('o', __order, 'v', named_struct\('i', ", resolved)


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_the_net_feed_from_resolved_rows_pairs_nothing(dialect):
    rendered = sql.render("change_net.sql.j2", key=["id"], columns=SCHEMA.column_names, resolved="r")
    parsed = sqlglot.parse_one(rendered, read=dialect)
    assert list(parsed.find_all(exp.Join)) == []
    assert sorted({table.name for table in parsed.find_all(exp.Table)} - {"paired"}) == ["r"]
    assert "a.__before.i" in rendered and "coalesce(a.__position, a.__before.p)" in rendered


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_the_history_store_under_retention_parses(dialect):
    context = {**contexts()["history_rows.sql.j2"], "increments": None, "store": True, "cutoff_us": 1_700_000_000_000_000}
    rendered = sql.render("history_rows.sql.j2", **context)
    assert sqlglot.parse_one(rendered, read=dialect) is not None
    assert "__end.s < 1700000000000000" in rendered and "FROM `db`.`orders_increments`" not in rendered


@pytest.mark.parametrize("dialect", ["spark", "hive"])
def test_the_versions_added_to_no_kept_history_parse(dialect):
    rendered = sql.render("history_versions_added.sql.j2", written="w", kept=None, key=["id"], begins=BEGINS)
    parsed = sqlglot.parse_one(rendered, read=dialect)
    assert sorted({table.name for table in parsed.find_all(exp.Table)}) == ["begun", "w"]
    assert "redelivered" not in rendered
