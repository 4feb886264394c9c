"""The one place where names become SQL: validated identifiers, backquoted, and the type strings built of them.

A leaf module (it imports nothing of lakecompact but the errors), so every other module may use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from lakecompact.errors import SchemaError

_SAFE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_identifier(name: str, what: str = "identifier") -> str:
    """Names from a registry or a topic reach SQL only through here (and are then backquoted)."""
    if not isinstance(name, str) or not _SAFE_IDENTIFIER.match(name):
        raise SchemaError(f"{what} {name!r} is not usable: expected letters, digits and _ only, not starting with a digit")
    return name


def quote(name: str) -> str:
    """`name`, after check_identifier."""
    return f"`{check_identifier(name)}`"


def qualified(database: str, table: str) -> str:
    """`database`.`table`."""
    return f"{quote(database)}.{quote(table)}"


def struct_type(fields: Iterable[tuple[str, str]]) -> str:
    """STRUCT<`name`:TYPE,...> of (name, type) pairs."""
    return "STRUCT<" + ",".join(f"{quote(name)}:{kind}" for name, kind in fields) + ">"


def column_list(columns: Iterable[tuple[str, str]]) -> str:
    """`name` TYPE, ... (a DDL column list, as StructType.fromDDL reads it)."""
    return ", ".join(f"{quote(name)} {kind}" for name, kind in columns)
