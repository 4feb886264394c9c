"""`lakecompact views --dialect ...`: the view of every table in other engines' SQL.

Trino, Presto and Athena get sqlglot's transpilation of the Spark view; Hive gets the same template rendered
in the form Hive runs (MAX over named_struct(order, row) instead of MAX_BY, no lambdas, no casts to complex
types). No Hive, Trino or Presto server runs on this machine, so each text is parse-checked in its own
dialect, and the Hive form, which is also valid Spark SQL, is run on Spark against a real lake and must
return exactly what the Spark view returns.
"""

from __future__ import annotations

import re

import pytest
import sqlglot
from sqlglot import exp

from lakecompact.catalog import Catalog
from lakecompact.errors import LakecompactError
from lakecompact.schema.model import Field, TableSchema
from lakecompact.views.dialects import DIALECTS, view_sql
from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic
from tests.unit.test_templates import KEYLESS, SCHEMA


@pytest.mark.parametrize("dialect", DIALECTS)
def test_each_dialect_parses_in_its_own_dialect(dialect):
    text = view_sql(SCHEMA, "lake", dialect)
    statement = sqlglot.parse_one(text, read=dialect)
    assert isinstance(statement, exp.Create) and statement.kind == "VIEW"
    assert statement.this.sql(dialect=dialect).replace('"', "").replace("`", "") == "lake.orders"


def test_hive_form_uses_only_what_hive_has():
    text = view_sql(SCHEMA, "lake", "hive")
    tree = sqlglot.parse_one(text, read="hive")
    assert not list(tree.find_all(exp.ArgMax)), "Hive has no MAX_BY"
    assert not list(tree.find_all(exp.Lambda)), "Hive has no lambdas (filter, transform)"
    complex_casts = [c.sql() for c in tree.find_all(exp.Cast) if c.to.is_type(*exp.DataType.NESTED_TYPES)]
    assert not complex_casts, f"Hive cannot cast to complex types: {complex_casts}"
    assert not re.search(r"\bSTRUCT\(", text, re.IGNORECASE), "Hive's struct() takes no field names"
    # the last event, the last known row, and one per TOAST-able column (note, tags, amount)
    maxima = [m.sql() for m in tree.find_all(exp.Max)]
    assert len([m for m in maxima if "'o'" in m or "AS o" in m]) == 2 + 3, maxima


def test_spark_form_keeps_max_by():
    tree = sqlglot.parse_one(view_sql(SCHEMA, "lake", "spark"), read="spark")
    assert list(tree.find_all(exp.ArgMax))


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (KEYLESS, ["log", "no key", "to_json"]),
        (TableSchema("attrs", "s.public.attrs", (Field("id", {"type": "int32"}),
                                                  Field("labels", {"type": "map", "keys": {"type": "string"},
                                                                   "values": {"type": "string"}})), ("id",)),
         ["attrs", "MAP columns (labels)"]),
    ],
)
def test_hive_refuses_what_it_cannot_express(schema, words):
    with pytest.raises(LakecompactError) as error:
        view_sql(schema, "lake", "hive")
    assert all(w in str(error.value) for w in words), str(error.value)


def test_unknown_dialect_names_the_choices():
    with pytest.raises(LakecompactError, match="expected one of spark, hive, trino, presto, athena, got 'oracle'"):
        view_sql(SCHEMA, "lake", "oracle")


def _row(i, note, qty):
    return {"id": i, "note": note, "qty": qty}


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

