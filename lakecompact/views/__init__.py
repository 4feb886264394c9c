"""The read side: the read views, `sql`, `status`, `changes`."""

from __future__ import annotations

import typing
from typing import Literal

# the engines whose SQL `views --dialect` writes
Dialect = Literal["spark", "hive", "trino", "presto", "athena"]
DIALECTS: tuple[str, ...] = typing.get_args(Dialect)
