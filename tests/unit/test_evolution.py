"""Schema evolution: added, dropped, widened and incompatible columns, and key changes."""

from __future__ import annotations

import pytest

from lakecompact.lake.connect import Field
from lakecompact.lake.model import TableSchema
from lakecompact.schema.evolution import Change, classify, diff, key_changed, widens
from tests.support.debezium import BIGINT, DATE, DOUBLE, INT, MICRO_TS, TEXT, ZONED_TS, decimal

FLOAT = {"type": "float"}
TINYINT = {"type": "int8"}
SMALLINT = {"type": "int16"}
TIMESTAMP = {"type": "int64", "name": "io.debezium.time.Timestamp", "version": 1}
ADDRESS = {
    "type": "struct",
    "fields": [{"type": "string", "optional": True, "field": "street"}],
    "optional": True,
}


def fields(**schemas) -> list[Field]:
    return [Field(name, schema) for name, schema in schemas.items()]


def test_no_change():
    assert diff(fields(id=INT, name=TEXT), fields(id=INT, name=TEXT)) == []
    assert classify([]) == "compatible"


def test_same_table_type_through_other_connect_names_is_no_change():
    # Debezium Timestamp (millis) → MicroTimestamp: both TIMESTAMP columns; decoding follows each event's schema
    assert diff(fields(at=TIMESTAMP), fields(at=MICRO_TS)) == []
    assert diff(fields(at=MICRO_TS), fields(at=ZONED_TS)) == []
    assert diff(fields(n={**INT, "optional": False}), fields(n={**INT, "optional": True})) == []


def test_added_and_dropped():
    changes = diff(fields(id=INT, legacy=TEXT), fields(id=INT, email=TEXT, born=DATE))
    assert changes == [
        Change("legacy", "dropped", "STRING", None),
        Change("email", "added", None, "STRING"),
        Change("born", "added", None, "DATE"),
    ]
    assert classify(changes) == "compatible"


def test_a_rename_is_a_drop_plus_an_add():
    assert diff(fields(id=INT, name=TEXT), fields(id=INT, full_name=TEXT)) == [
        Change("name", "dropped", "STRING", None),
        Change("full_name", "added", None, "STRING"),
    ]


# a column's type changes: what each one is, the Connect schemas before and after, and their table types
TYPE_CHANGES = [
    ("widened", TINYINT, SMALLINT, "TINYINT", "SMALLINT"),
    ("widened", TINYINT, BIGINT, "TINYINT", "BIGINT"),
    ("widened", SMALLINT, INT, "SMALLINT", "INT"),
    ("widened", INT, BIGINT, "INT", "BIGINT"),
    ("widened", FLOAT, DOUBLE, "FLOAT", "DOUBLE"),
    ("widened", {"type": "float32"}, {"type": "float64"}, "FLOAT", "DOUBLE"),
    ("widened", decimal(10, 2), decimal(12, 2), "DECIMAL(10,2)", "DECIMAL(12,2)"),
    ("incompatible", TEXT, INT, "STRING", "INT"),
    ("incompatible", INT, TEXT, "INT", "STRING"),
    ("incompatible", BIGINT, INT, "BIGINT", "INT"),
    ("incompatible", DOUBLE, FLOAT, "DOUBLE", "FLOAT"),
    ("incompatible", INT, DOUBLE, "INT", "DOUBLE"),
    ("incompatible", decimal(12, 2), decimal(10, 2), "DECIMAL(12,2)", "DECIMAL(10,2)"),
    ("incompatible", decimal(10, 2), decimal(12, 4), "DECIMAL(10,2)", "DECIMAL(12,4)"),
    ("incompatible", decimal(10, 2), decimal(10, 3), "DECIMAL(10,2)", "DECIMAL(10,3)"),
    ("incompatible", ADDRESS, TEXT, "STRUCT<`street`:STRING>", "STRING"),
    ("incompatible", DATE, MICRO_TS, "DATE", "TIMESTAMP"),
    ("incompatible", {"type": "array", "items": INT}, {"type": "array", "items": BIGINT},
     "ARRAY<INT>", "ARRAY<BIGINT>"),
]


def type_changes(change: str) -> list[tuple]:
    """(old, new, old_type, new_type) of the TYPE_CHANGES that are `change`."""
    return [case[1:] for case in TYPE_CHANGES if case[0] == change]


@pytest.mark.parametrize(("old", "new", "old_type", "new_type"), type_changes("widened"))
def test_widenings(old, new, old_type, new_type):
    changes = diff(fields(c=old), fields(c=new))
    assert changes == [Change("c", "widened", old_type, new_type)]
    assert classify(changes) == "compatible"


@pytest.mark.parametrize(("old", "new", "old_type", "new_type"), type_changes("incompatible"))
def test_incompatible_changes(old, new, old_type, new_type):
    changes = diff(fields(id=INT, c=old), fields(id=INT, c=new, extra=TEXT))
    assert changes == [
        Change("c", "incompatible", old_type, new_type),
        Change("extra", "added", None, "STRING"),
    ]
    assert classify(changes) == "incompatible"


def test_widens_on_type_strings():
    assert widens("INT", "BIGINT") and widens("DECIMAL(5,0)", "DECIMAL(38,0)")
    assert (
        not widens("BIGINT", "BIGINT")
        and not widens("DECIMAL(5,1)", "DECIMAL(6,2)")
        and not widens("STRING", "BINARY")
    )


def test_diff_of_table_schemas_and_change_as_json():
    old = TableSchema("orders", "shop.shop.orders", tuple(fields(id=INT, total=decimal(10, 2))), ("id",))
    new = TableSchema(
        "orders", "shop.shop.orders", tuple(fields(id=BIGINT, total=decimal(10, 2), note=TEXT)), ("id",)
    )
    changes = diff(old, new)
    assert [c.to_json() for c in changes] == [
        {"column": "id", "change": "widened", "old_type": "INT", "new_type": "BIGINT"},
        {"column": "note", "change": "added", "old_type": None, "new_type": "STRING"},
    ]


def test_key_changed():
    assert not key_changed(["id"], ("id",))
    assert key_changed(["id"], ["id", "region"])
    assert key_changed(["a", "b"], ["b", "a"])
    assert key_changed([], ["id"])
    table = TableSchema("t", "s.t", tuple(fields(id=INT)), ("id",))
    assert not key_changed(table, ["id"]) and key_changed(table, [])


def test_docstring_examples():
    import doctest

    import lakecompact.schema.evolution

    assert doctest.testmod(lakecompact.schema.evolution).failed == 0
