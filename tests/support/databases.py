"""Database names for the tests' lakes, and which metastore the run uses.

LAKECOMPACT_TEST_METASTORE switches the suite's Spark session to a shared Hive metastore: a `thrift://` URI, or
`stack` for the e2e stack's own. A shared metastore also holds other runs' databases (the stack's outlives a run),
so each database then carries the run's own prefix, and the run drops the databases it created at the end
(tests/conftest.py).
"""

from __future__ import annotations

import itertools
import os
import uuid

SHARED_METASTORE = os.environ.get("LAKECOMPACT_TEST_METASTORE", "")
PREFIX = f"lake_{uuid.uuid4().hex[:8]}_" if SHARED_METASTORE else "lake"
_numbers = itertools.count()


def database_name() -> str:
    """A database of this run's own: lake0, lake1, ... on the embedded metastore."""
    return f"{PREFIX}{next(_numbers)}"
