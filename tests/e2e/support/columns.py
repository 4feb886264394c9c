"""Column kinds and tables, as both sides see them: the Spark type docs/design.md "Schema extractor" asks for, and one canonical form of a
value.

Values are compared in one canonical form on both sides (see `canonical`):
  int kinds -> int, decimal -> str with exactly the column's scale, date -> 'YYYY-MM-DD',
  timestamp kinds -> 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC for timestamptz / MariaDB TIMESTAMP),
  bool -> bool, double -> float, text -> str, NULL -> None.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

_EXACT = decimal.Context(prec=80)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # int, smallint, bigint, dec:P:S, date, ts6, ts3, tstz, bool, bit, tinyint1, double, varchar:N, text
    nullable: bool = True

    @property
    def scale(self) -> int:
        return int(self.kind.split(":")[2])


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]  # () = no primary key

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def with_column(self, column: Column) -> Table:
        return Table(self.name, self.columns + (column,), self.key)


def spark_type(kind: str, connector: str) -> str:
    """The view's column type docs/design.md "Schema extractor" asks for (as Spark's simpleString spells it)."""
    base, _, rest = kind.partition(":")
    if base == "dec":
        return f"decimal({rest.replace(':', ',')})"
    if base == "tinyint1" or (base == "bool" and connector == "mariadb"):
        # MariaDB BOOLEAN is TINYINT(1); Debezium's MariaDB connector sends it as INT16
        return "smallint"
    return {
        "int": "int", "smallint": "smallint", "bigint": "bigint", "date": "date", "ts6": "timestamp",
        "ts3": "timestamp", "tstz": "timestamp", "bool": "boolean", "bit": "boolean", "double": "double",
        "varchar": "string", "text": "string",
    }[base]


def canonical(column: Column, value: Any) -> Any:
    """One comparable form of a value read from either side (see the module docstring)."""
    if value is None:
        return None
    base = column.kind.split(":")[0]
    if base in ("int", "smallint", "bigint", "tinyint1"):
        return int(value)
    if base == "bool" and isinstance(value, (int, bool)) and not isinstance(value, bool):
        return int(value)  # MariaDB BOOLEAN: 0/1 on both sides
    if base in ("bool", "bit"):
        if isinstance(value, str):
            return value.lower() in ("t", "true", "1")
        return bool(value)
    if base == "dec":
        exact = Decimal(str(value))
        unscaled = exact.scaleb(column.scale, context=_EXACT)
        assert unscaled == unscaled.to_integral_value(), f"{column.name}: {value} has more than {column.scale} decimals"
        return scaled(int(unscaled), column.scale)
    if base == "double":
        return float(value)
    if base == "date":
        return str(value)[:10]
    if base in ("ts6", "ts3", "tstz"):
        text = str(value).replace("T", " ")
        if "." not in text:
            text += ".000000"
        head, frac = text.split(".", 1)
        return f"{head}.{(frac + '000000')[:6]}"
    return str(value)


def scaled(unscaled: int, scale: int) -> str:
    """An exact decimal string (Decimal arithmetic would round to 28 digits)."""
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    return ("-" if unscaled < 0 else "") + text
