"""Schema evolution as data: what changed between two versions of a table's columns, and is it safe.

Pure functions over `Field`s (or `TableSchema`s). Types are compared as the Spark/Hive column types
that `lakecompact.lake.connect.table_type` gives, so two Connect schemas stored alike (a Debezium
Timestamp and a MicroTimestamp are both TIMESTAMP) are no change at all.

>>> from lakecompact.lake.connect import Field
>>> old = [Field("id", {"type": "int32"}), Field("name", {"type": "string"})]
>>> new = [Field("id", {"type": "int64"}), Field("email", {"type": "string"})]
>>> [c.change for c in diff(old, new)]
['widened', 'dropped', 'added']
>>> classify(diff(old, new))
'compatible'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from lakecompact.lake.connect import Field
from lakecompact.lake.model import TableSchema

ChangeKind = Literal["added", "dropped", "widened", "incompatible"]
Classification = Literal["compatible", "incompatible"]

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT")
_FLOATS = ("FLOAT", "DOUBLE")
_DECIMAL = re.compile(r"^DECIMAL\((\d+),(\d+)\)$")


@dataclass(frozen=True)
class Change:
    """One column's change; a type is None where the column does not exist (old of added, new of dropped)."""

    column: str
    change: ChangeKind
    old_type: str | None
    new_type: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def diff(
    old_fields: Iterable[Field] | TableSchema, new_fields: Iterable[Field] | TableSchema
) -> list[Change]:
    """The changes from old to new: existing columns in old order (widened, incompatible, dropped), then added.

    A column missing from the new schema is `dropped` (the table keeps it; it reads as null). A rename
    is a drop plus an add.
    """
    old, new = _by_name(old_fields), _by_name(new_fields)
    changes = []
    for name, old_type in old.items():
        new_type = new.get(name)
        if new_type is None:
            changes.append(Change(name, "dropped", old_type, None))
        elif new_type != old_type:
            kind: ChangeKind = "widened" if widens(old_type, new_type) else "incompatible"
            changes.append(Change(name, kind, old_type, new_type))
    changes += [Change(name, "added", None, new_type) for name, new_type in new.items() if name not in old]
    return changes


def widens(old_type: str, new_type: str) -> bool:
    """A safe widening of a Spark/Hive type: int8→int16→int32→int64, float→double, decimal precision up."""
    if old_type in _INTEGERS and new_type in _INTEGERS:
        return _INTEGERS.index(new_type) > _INTEGERS.index(old_type)
    if old_type in _FLOATS and new_type in _FLOATS:
        return _FLOATS.index(new_type) > _FLOATS.index(old_type)
    old_decimal, new_decimal = _DECIMAL.match(old_type), _DECIMAL.match(new_type)
    if old_decimal and new_decimal:
        (old_p, old_s), (new_p, new_s) = map(int, old_decimal.groups()), map(int, new_decimal.groups())
        return new_s == old_s and new_p > old_p
    return False


def classify(changes: Iterable[Change]) -> Classification:
    """`incompatible` when any change is; added, dropped and widened columns are all applied safely."""
    return "incompatible" if any(c.change == "incompatible" for c in changes) else "compatible"


def key_changed(old_key: Sequence[str] | TableSchema, new_key: Sequence[str] | TableSchema) -> bool:
    """True when the key columns differ (names or order): latest-per-key state cannot carry over."""
    return _key(old_key) != _key(new_key)


def _by_name(fields: Iterable[Field] | TableSchema) -> dict[str, str]:
    items = fields.fields if isinstance(fields, TableSchema) else fields
    return {f.name: f.table_type for f in items}


def _key(key: Sequence[str] | TableSchema) -> tuple[str, ...]:
    return tuple(key.key if isinstance(key, TableSchema) else key)
