"""Database names for the tests' lakes, and which metastore the run uses.

LAKECOMPACT_TEST_METASTORE switches the suite's Spark session to a shared Hive metastore: a `thrift://` URI, or
`stack` for the e2e stack's own. A shared metastore also holds other runs' databases (the stack's outlives a run,
and the end-to-end tests use it whatever the session's metastore), so each database carries the run's own prefix,
and a run on a shared metastore drops the databases its session created at the end (tests/conftest.py).
"""

from __future__ import annotations

import itertools
import os
import uuid
from pathlib import Path

SHARED_METASTORE = os.environ.get("LAKECOMPACT_TEST_METASTORE", "")
PREFIX = f"lake_{uuid.uuid4().hex[:8]}_"
_numbers = itertools.count()


def database_name() -> str:
    """A database of this run's own: lake_<run>_0, lake_<run>_1, ..."""
    return f"{PREFIX}{next(_numbers)}"


def lake_config(tmp_path: Path, database: str, metastore_uri: str = "", *, source: str = "",
                metastore_extra: str = "", extra: str = "") -> Path:
    """A lakecompact.toml for a small lake under tmp_path: the files source `tmp_path/events/*.jsonl` (or the
    given `[source]` body), the metastore at metastore_uri ("" for the embedded one; `metastore_extra` added to
    its section), two buckets, two shuffle partitions; `extra` is added to `[defaults]`."""
    source = source or f'kind = "files"\npaths = ["{tmp_path / "events"}/*.jsonl"]\n'
    metastore = f'[metastore]\nuri = "{metastore_uri}"\n{metastore_extra}' if metastore_uri else ""
    config = tmp_path / "lakecompact.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\ndatabase = "{database}"\n[source]\n{source}{metastore}'
        f'[defaults]\nbuckets = 2\n{extra}[spark.conf]\n"spark.sql.shuffle.partitions" = "2"\n'
    )
    (tmp_path / "events").mkdir(exist_ok=True)
    return config
