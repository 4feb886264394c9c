"""Rows as the tests write and expect them, made by one helper each instead of a copy per test file: a row of a
table's columns from its values (`row_maker`), a base row with its op, deleted flag and position
(`base_row_maker`), and a lake's rows cut to the columns a test checks (`picked`, `base_reader`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable


def row_maker(*columns: str, drop_nulls: bool = False) -> Callable[..., dict]:
    """Rows of these columns from their values, in this order: row_maker("id", "name")(1, "a") is {"id": 1,
    "name": "a"}. drop_nulls: a row as the view's JSON gives it, without its null fields."""
    def row(*values) -> dict:
        made = dict(zip(columns, values, strict=True))
        return {k: v for k, v in made.items() if v is not None} if drop_nulls else made
    return row


def base_row_maker(*columns: str) -> Callable[..., dict]:
    """Base rows of these columns: their values, then the op and the position; deleted=True for a soft-deleted
    row. base_row_maker("id", "name")(1, "a", "u", 200) is {"id": 1, "name": "a", "__op": "u", "__deleted":
    False, "__position": 200}."""
    def base_row(*values, deleted: bool = False) -> dict:
        *data, op, position = values
        return {**dict(zip(columns, data, strict=True)), "__op": op, "__deleted": deleted, "__position": position}
    return base_row


def picked(rows: Iterable[dict], columns: Iterable[str]) -> list[dict]:
    """Each row cut to these columns (one it lacks, as null)."""
    columns = tuple(columns)
    return [{k: r.get(k) for k in columns} for r in rows]


def base_reader(table: str | None, *columns: str) -> Callable[..., list[dict]]:
    """The base's rows of a table (tests/support/lake.py `Lake.base`), cut to these columns: reader(lake), or
    reader(lake, table) when `table` is None."""
    def read(lake, name: str | None = None) -> list[dict]:
        return picked(lake.base(name or table), columns)
    return read
