"""A reader of change feeds that polls while other processes write (and are killed): its own Spark session on the
lake's config, as a downstream job would run, reading `<t>_changes` through the metastore again and again.

    python -m tests.e2e.support.feed_reader CONFIG OUT TABLE...

Each poll appends one JSON line per table to OUT: {"table", "versions": {version: [rows, checksum]}} or, when the
read failed, {"table", "error"}. It stops once the file OUT.stop exists, after one last poll.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from lakecompact import config as config_module
from lakecompact.lake.model import CHANGE_PARTITION
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


def main(config_path: str, out: str, *tables: str) -> None:
    config = config_module.load(config_path)
    spark = create_session(config)
    stop = Path(out + ".stop")
    with open(out, "a", encoding="utf-8") as sink:
        while True:
            last = stop.exists()
            for table in tables:
                sink.write(json.dumps({**observe(spark, config.database, table), "at": time.time()}) + "\n")
                sink.flush()
            if last:
                return
            time.sleep(PAUSE_SECONDS)


if __name__ == "__main__":
    main(*sys.argv[1:])
