"""Topic names into table names, and the identifiers lakecompact lets reach SQL."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lakecompact.errors import SchemaError

if TYPE_CHECKING:
    from lakecompact.config import Config

_SAFE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNSAFE_CHARS = re.compile(r"[^a-z0-9_]")


def table_for_topic(topic: str, config: Config) -> str:
    """`server.schema.table` → `schema_table`, lower-cased, other characters → `_` (see DESIGN)."""
    for name, table in config.tables.items():
        if table.topic == topic:
            return name
    naming = config.naming
    name = re.sub(naming.regexp, naming.replacement, topic) if naming.regexp else topic
    parts = name.split(".")
    if naming.drop_server and len(parts) >= 2:
        parts = parts[1:]
    name = naming.prefix + "_".join(parts)
    if naming.case == "lower":
        name = name.lower()
    elif naming.case == "upper":
        name = name.upper()
    name = _UNSAFE_CHARS.sub("_", name) if naming.case == "lower" else re.sub(r"[^A-Za-z0-9_]", "_", name)
    return f"t_{name}" if name[:1].isdigit() else name


def check_identifier(name: str, what: str = "identifier") -> str:
    """Names from a registry or a topic reach SQL only through here (and are then backquoted)."""
    if not isinstance(name, str) or not _SAFE_IDENTIFIER.match(name):
        raise SchemaError(f"{what} {name!r} is not usable: expected letters, digits and _ only, not starting with a digit")
    return name


def quote(name: str) -> str:
    return f"`{check_identifier(name)}`"
