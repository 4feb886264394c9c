"""`lakecompact views --dialect ...`: the view of every table in other engines' SQL.

Trino, Presto and Athena get sqlglot's transpilation of the Spark view; Hive gets the same template rendered
in the form Hive runs (MAX over named_struct(order, row) instead of MAX_BY, no lambdas, no casts to complex
types; a keyless table's events matched by their columns, null-safe, as Hive has no to_json). No Hive or
Presto server runs on this machine, so each text is parse-checked in its own dialect, and the Hive form, which
is also valid Spark SQL, is run on Spark against a real lake and must return exactly what the Spark view
returns. Trino does run: tests/e2e/test_trino_reader.py, which reads the row history's Trino form too.
"""

from __future__ import annotations

import argparse
import random
import re

import pytest
import sqlglot
from sqlglot import exp

from lakecompact.cli import Context, _views
from lakecompact.errors import LakecompactError
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.model import Field, TableSchema
from lakecompact.views.dialects import (
    DIALECTS,
    HISTORY_DIALECTS,
    UnsupportedDialect,
    history_view_sql,
    view_sql,
)
from tests.semantics.reference import expected_view
from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic
from tests.support.rows import row_maker
from tests.support.schemas import KEYLESS, SCHEMA
from tests.support.source import Source


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_parses_in_its_own_dialect(dialect):
    text = view_sql(SCHEMA, "lake", dialect)
    statement = sqlglot.parse_one(text, read=dialect)
    assert isinstance(statement, exp.Create) and statement.kind == "VIEW"
    assert statement.this.sql(dialect=dialect).replace('"', "").replace("`", "") == "lake.orders"


@pytest.mark.parametrize("dialect", HISTORY_DIALECTS)
def test_each_history_form_parses_in_its_own_dialect(dialect):
    text = history_view_sql(SCHEMA, "lake", dialect, "lake_x")
    statement = sqlglot.parse_one(text, read=dialect)
    assert isinstance(statement, exp.Create) and statement.kind == "VIEW"
    assert statement.this.sql(dialect=dialect).replace('"', "").replace("`", "") == "lake_x.orders_history"
    read = {f"{t.db}.{t.name}" for t in statement.expression.find_all(exp.Table) if t.db}
    assert read == {"lake.orders_events", "lake.orders_increments"}, read


@pytest.mark.parametrize("dialect", ["trino", "athena"])
def test_the_trino_history_takes_the_last_known_value_and_exact_microseconds(dialect):
    """sqlglot writes Spark's LAST(x, TRUE) OVER w as ARBITRARY(x) IGNORE NULLS (any value, not the last known) and
    leaves timestamp_micros, which Trino lacks, as it is."""
    text = history_view_sql(SCHEMA, "lake", dialect)
    tree = sqlglot.parse_one(text, read=dialect)
    assert "ARBITRARY" not in text.upper() and "TIMESTAMP_MICROS" not in text.upper()
    toastable = [f.name for f in SCHEMA.fields if f.toastable and f.name not in SCHEMA.key]
    assert len(list(tree.find_all(exp.LastValue))) == len(toastable)
    assert text.count("LAST_VALUE(") == len(toastable) and text.count(") IGNORE NULLS OVER") >= len(toastable)
    assert text.upper().count("FROM_UNIXTIME_NANOS(") == 2  # __valid_from, __valid_to
    assert "Cannot convert" not in text and "ROW(" in text  # each struct typed as Trino's ROW


@pytest.mark.parametrize("dialect", sorted(set(DIALECTS) - set(HISTORY_DIALECTS)))
def test_an_engine_without_a_history_form_gets_one_line(dialect):
    with pytest.raises(UnsupportedDialect, match="orders_history .row_history. has a form for spark, trino, athena only"):
        history_view_sql(SCHEMA, "lake", dialect)


def test_hive_form_uses_only_what_hive_has():
    text = view_sql(SCHEMA, "lake", "hive")
    tree = sqlglot.parse_one(text, read="hive")
    assert not list(tree.find_all(exp.ArgMax)), "Hive has no MAX_BY"
    assert not list(tree.find_all(exp.Lambda)), "Hive has no lambdas (filter, transform)"
    complex_casts = [c.sql() for c in tree.find_all(exp.Cast) if c.to.is_type(*exp.DataType.NESTED_TYPES)]
    assert not complex_casts, f"Hive cannot cast to complex types: {complex_casts}"
    assert not re.search(r"\bSTRUCT\(", text, re.IGNORECASE), "Hive's struct() takes no field names"
    # the last event, and one per TOAST-able column (note, tags, amount): no last known row for a delete's partial
    # image, since the view shows no deleted row
    maxima = [m.sql() for m in tree.find_all(exp.Max)]
    assert len([m for m in maxima if "'o'" in m or "AS o" in m]) == 1 + 3, maxima


def test_hive_form_of_a_keyless_table_matches_events_by_their_columns():
    """Hive has no to_json: a redelivered event is found by its position, op and columns, compared null-safe."""
    text = view_sql(KEYLESS, "lake", "hive")
    tree = sqlglot.parse_one(text, read="hive")
    assert "to_json" not in text.lower() and not list(tree.find_all(exp.ArgMax))
    assert "k.`amount` <=> a.`amount`" in text and "k.`__position` <=> a.`__position`" in text


def test_spark_form_takes_max_by_only_for_a_latest_value_that_holds_a_map():
    """MAX over named_struct(order, value) where the value can be compared; a MAP cannot, so MAX_BY (by the order
    alone) takes a latest value that holds one."""
    def aggregates(schema) -> tuple[int, int]:
        tree = sqlglot.parse_one(view_sql(schema, "lake", "spark"), read="spark")
        over_structs = [f for f in tree.find_all(exp.Max) if f.find(exp.Struct)]
        return len(over_structs), len(list(tree.find_all(exp.ArgMax)))

    assert aggregates(SCHEMA) == (1 + len([f for f in SCHEMA.fields if f.toastable]), 0)  # the row, TOAST values
    # the latest known `labels` (a TOAST-able map) holds the map; the latest row, without its TOAST-able columns
    # (each has its own aggregate), holds none
    assert aggregates(MAP_TABLE) == (1, 1)


@pytest.mark.parametrize("dialect", ["spark", "trino"])
def test_only_the_spark_form_reads_the_increments_once_per_query(dialect):
    """Spark inlines a deterministic CTE into each of its references (each listing the pending partitions again):
    the printed Spark view keeps the non-deterministic columns of the view lakecompact creates (the increments,
    and the base's merge-on-read deltas); Trino needs none."""
    tree = sqlglot.parse_one(view_sql(SCHEMA, "lake", dialect), read=dialect)
    read_once = [column for column in tree.find_all(exp.Alias) if column.alias == "__read_once"]
    assert [column.this.sql(dialect="spark").upper() for column in read_once] == (["RAND()"] * 2 if dialect == "spark" else [])


MAP_TABLE = TableSchema("attrs", "s.public.attrs", (
    Field("id", {"type": "int32"}),
    Field("labels", {"type": "map", "keys": {"type": "string"}, "values": {"type": "string"}}),
), ("id",))


def test_hive_refuses_a_table_with_map_columns():
    with pytest.raises(LakecompactError) as error:
        view_sql(MAP_TABLE, "lake", "hive")
    assert all(w in str(error.value) for w in ["attrs", "MAP columns (labels)"]), str(error.value)


def test_unknown_dialect_names_the_choices():
    with pytest.raises(LakecompactError, match="expected one of spark, hive, trino, presto, athena, got 'oracle'"):
        view_sql(SCHEMA, "lake", "oracle")


_row = row_maker("id", "note", "qty")


def test_hive_form_reads_what_the_spark_view_reads(lake):
    """TOAST, deletes, a late event after a compaction, and events still pending in the increments."""
    topic = Topic("pg.public.parts", [("id", INT), ("note", TEXT), ("qty", INT)], ["id"])
    lake.write([
        topic.event("c", _row(1, "one", 1), 100),
        topic.event("c", _row(2, "two", 2), 110),
        topic.event("c", _row(3, "three", 3), 120),
        topic.event("u", _row(4, PLACEHOLDER, 4), 130),   # nothing known of the note yet
        topic.event("d", _row(3, None, None), 140),
    ], name="one.jsonl")
    lake.land()
    lake.compact()
    lake.write([
        topic.event("u", _row(1, PLACEHOLDER, 10), 200),  # TOAST: the note stays "one"
        topic.event("c", _row(3, "three", 3), 115),       # late: older than the delete, stays deleted
        topic.event("c", _row(4, "four", 0), 125),        # late, but it knows the note of key 4
        topic.event("d", _row(2, None, None), 210),
        topic.event("c", _row(5, "five", 5), 220),
    ], name="two.jsonl")
    lake.land()  # not compacted: the view resolves the increments

    hive = view_sql(Catalog(lake.spark, lake.config).require("public_parts"), lake.database, "hive")
    query = hive.split(" AS\n", 1)[1]
    columns = "id, note, qty"
    via_hive_form = lake.rows(f"SELECT {columns} FROM ({query}) AS v ORDER BY id")
    via_spark_view = lake.rows(f"SELECT {columns} FROM `{lake.database}`.`public_parts` ORDER BY id")
    assert via_hive_form == via_spark_view == [_row(1, "one", 10), _row(4, "four", 4), _row(5, "five", 5)]


@pytest.mark.parametrize("seed", [3, 17])
def test_hive_form_reads_what_the_spark_view_reads_on_a_random_history(lake, seed):
    """Random changes (deletes, TOAST placeholders), a third delivered late, some after a compaction."""
    rng = random.Random(seed)
    source = Source("pg.public.items", rng)
    history = [line for position in range(100, 460, 3) for line in source.change(rng.randint(1, 15), position)]
    late = set(rng.sample(range(len(history)), len(history) // 3))
    lake.write([line for n, line in enumerate(history[:80]) if n not in late], name="one.jsonl")
    lake.land()
    lake.compact()
    lake.write([line for n, line in enumerate(history) if n >= 80 or n in late], name="two.jsonl")
    lake.land()

    hive = view_sql(Catalog(lake.spark, lake.config).require("public_items"), lake.database, "hive")
    query = hive.split(" AS\n", 1)[1]
    via_hive_form = lake.rows(f"SELECT id, note, qty FROM ({query}) AS v ORDER BY id")
    via_spark_view = lake.rows(f"SELECT id, note, qty FROM `{lake.database}`.`public_items` ORDER BY id")
    assert via_hive_form == via_spark_view
    assert {row["id"]: row for row in via_hive_form} == expected_view(source.model)


def test_hive_form_of_a_keyless_table_reads_what_the_spark_view_reads(lake):
    """Redelivered events (in one batch, in a later one, after a compaction; with null values) are kept once,
    deletes are not shown, and two events with the same values at different positions are two rows."""
    topic = Topic("my.shop.audit", [("msg", TEXT), ("amount", INT)], None, connector="mysql")

    def event(op, msg, amount, pos):
        return topic.event(op, {"msg": msg, "amount": amount}, ("mysql-bin.000001", pos, 0))

    first = [event("c", "a", 1, 100), event("c", "b", None, 200), event("c", "a", 1, 300), event("d", "d", 4, 400)]
    lake.write([*first, event("c", "b", None, 200)], name="one.jsonl")  # one redelivered in the same batch
    lake.land()
    lake.compact()
    lake.write([event("c", "b", None, 200), event("c", "a", 1, 100),  # redelivered after the compaction
                event("c", "e", None, 500), event("c", "e", None, 500)], name="two.jsonl")
    lake.land()  # not compacted: the view resolves the increments

    hive = view_sql(Catalog(lake.spark, lake.config).require("shop_audit"), lake.database, "hive")
    query = hive.split(" AS\n", 1)[1]
    columns = "msg, amount, __binlog_pos"
    order = "ORDER BY __binlog_pos"
    via_hive_form = lake.rows(f"SELECT {columns} FROM ({query}) AS v {order}")
    via_spark_view = lake.rows(f"SELECT {columns} FROM `{lake.database}`.`shop_audit` {order}")
    expected = [{"msg": "a", "amount": 1, "__binlog_pos": 100}, {"msg": "b", "__binlog_pos": 200},
                {"msg": "a", "amount": 1, "__binlog_pos": 300}, {"msg": "e", "__binlog_pos": 500}]
    assert via_hive_form == via_spark_view == expected


def test_views_skips_a_table_hive_cannot_serve_and_prints_the_others(lake, capsys):
    topic = Topic("pg.public.parts", [("id", INT), ("note", TEXT)], ["id"])
    lake.write([topic.event("c", {"id": 1, "note": "one"}, 100)])
    lake.land()
    Catalog(lake.spark, lake.config).create(MAP_TABLE)
    context = Context(argparse.Namespace(command="views", dialect="hive", table=None, database=None))
    context.__dict__.update(config=lake.config, spark=lake.spark)  # the session and config the lake already has

    _views(context.args, context)
    printed = capsys.readouterr()
    assert f"VIEW {lake.database}.public_parts AS" in printed.out and "attrs" not in printed.out
    assert "attrs has MAP columns (labels)" in printed.err and "skipped" in printed.err
    with pytest.raises(LakecompactError, match="MAP columns"):  # asked for it alone: nothing to print
        _views(argparse.Namespace(command="views", dialect="hive", table=["attrs"], database=None), context)


@pytest.mark.parametrize("dialect", ["trino", "presto", "athena"])
def test_a_keyless_tables_event_identity_is_json_text_the_engine_writes(dialect):
    """The Spark view tells a keyless table's events apart by their JSON text with Spark's options (timestamps to
    the microsecond); JSON_FORMAT takes no options."""
    spark_text = view_sql(KEYLESS, "lake", "spark")
    assert "'timestampFormat'" in spark_text
    tree = sqlglot.parse_one(view_sql(KEYLESS, "lake", dialect), read=dialect)
    formats = list(tree.find_all(exp.JSONFormat))
    assert formats and all(f.args.get("options") is None for f in formats)
