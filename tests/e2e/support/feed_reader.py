"""A reader of change feeds that polls while other processes write (and are killed): its own Spark session on the
lake's config, as a downstream job would run, reading `<t>_changes` through the metastore again and again.

    python -m tests.e2e.support.feed_reader CONFIG OUT TABLE...

Each poll appends one JSON line per table to OUT: {"table", "versions": {version: [rows, checksum]}} or, when the
read failed, {"table", "error"}. A table is read again only when what a read of it sees may have changed: its
partitions in the metastore (a version's partition always names its own folder, TablePaths.changes) or the files
under its feed's folder (a read sees nothing else; a written object never changes). It stops once the file OUT.stop
exists, after one last read of every table.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from lakecompact import config as config_module
from lakecompact.lake.model import CHANGE_PARTITION
from lakecompact.lake.paths import DatabasePaths, TablePaths
from lakecompact.naming import changes_table
from lakecompact.spark import create_session

PAUSE_SECONDS = 1.0  # between polls: leaves the writers the cores they need on a small machine


def observe(spark, database: str, table: str) -> dict:
    name = f"`{database}`.`{changes_table(table)}`"
    version = CHANGE_PARTITION[0]
    try:
        spark.sql(f"REFRESH TABLE {name}")
        checksum = "sum(CAST(xxhash64(to_json(struct(*))) AS DECIMAL(38, 0)))"
        rows = spark.sql(f"SELECT `{version}` AS v, count(*) AS n, {checksum} AS h FROM {name} "
                         f"GROUP BY `{version}`").collect()
    except Exception as error:  # noqa: BLE001 - a failed read is an observation the test judges
        return {"table": table, "error": str(error)}
    return {"table": table, "versions": {str(r.v): [r.n, str(r.h)] for r in rows}}


def seen_state(spark, config, table: str) -> str | None:
    """What a read of the table's feed depends on: its partitions as the metastore lists them, and every file under
    the feed's folder with its length; None when it cannot be told (then it is read)."""
    jvm, database_root = spark._jvm, DatabasePaths.of(config.warehouse, config.database).root
    try:
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        partitions = catalog.listPartitionNames(config.database, changes_table(table), jvm.scala.Option.empty()).toString()
        root = jvm.org.apache.hadoop.fs.Path(TablePaths(f"{database_root}/{table}").changes_root)
        files, found = [], root.getFileSystem(spark._jsc.hadoopConfiguration()).listFiles(root, True)
        while found.hasNext():
            status = found.next()
            files.append(f"{status.getPath().toString()} {status.getLen()}")
    except Exception:  # noqa: BLE001 - not there yet, or the store did not answer: read the table
        return None
    return partitions + "\n" + "\n".join(sorted(files))


def main(config_path: str, out: str, *tables: str) -> None:
    config = config_module.load(config_path)
    spark = create_session(config)
    stop = Path(out + ".stop")
    read_at: dict[str, str] = {}
    with open(out, "a", encoding="utf-8") as sink:
        while True:
            last = stop.exists()
            for table in tables:
                state = seen_state(spark, config, table)
                if last or state is None or read_at.get(table) != state:
                    sink.write(json.dumps({**observe(spark, config.database, table), "at": time.time()}) + "\n")
                    sink.flush()
                    if state is not None:
                        read_at[table] = state
            if last:
                return
            time.sleep(PAUSE_SECONDS)


if __name__ == "__main__":
    main(*sys.argv[1:])
