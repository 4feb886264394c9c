"""Where a table's base buckets are, on a lake of tests/support/lake.py: its folder, the locations the metastore's
`<t>_base` partitions point at, and the parquet files of a base version, per bucket."""

from __future__ import annotations

from pathlib import Path


def table_dir(lake, table: str) -> Path:
    return lake.tmp / "warehouse" / lake.database / table


def bucket_locations(lake, table: str) -> dict[int, str]:
    """Where the metastore's `<t>_base` partitions point, per bucket."""
    name = f"`{lake.database}`.`{table}_base`"
    buckets = [int(r[0].split("=")[1]) for r in lake.spark.sql(f"SHOW PARTITIONS {name}").collect()]
    locations = {}
    for bucket in buckets:
        rows = lake.spark.sql(f"DESCRIBE FORMATTED {name} PARTITION (__bucket = {bucket})").collect()
        locations[bucket] = next(r.data_type for r in rows if r.col_name == "Location")
    return locations


def files_of(lake, table: str, version: int) -> dict[int, dict[str, int]]:
    """bucket -> {parquet file path: modification time (ns)} under base/v=<version>."""
    found: dict[int, dict[str, int]] = {}
    for f in (table_dir(lake, table) / "base" / f"v={version}").glob("__bucket=*/*.parquet"):
        found.setdefault(int(f.parent.name.split("=")[1]), {})[str(f)] = f.stat().st_mtime_ns
    return found
