"""`lakecompact demo`: land, compact and query the Debezium events of examples/events/ (installed with the package).

It runs the whole flow twice, the way a production lake sees it: a first batch, a compaction, then a
second batch with late and duplicate events (and a truncated line) that the view serves before the
next compaction, and the final compacted tables.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from lakecompact import config as config_module
from lakecompact import data_folder
from lakecompact.compaction.compact import compact
from lakecompact.landing.land import land
from lakecompact.report import say, seconds_since
from lakecompact.views.status import print_status, status

EXAMPLES = data_folder("demo_events", "examples/events")
TABLES = {"public_customers": "id", "shop_orders": "order_id"}


def run_demo(warehouse: str | None = None, *, archive_options: tuple[str, ...] = ()) -> None:
    started = time.monotonic()
    root = Path(warehouse or ".demo").resolve()
    if root.exists():
        shutil.rmtree(root)
    inbox = root / "events"
    inbox.mkdir(parents=True)
    config = config_module.from_dict(
        {
            "warehouse": str(root / "warehouse"),
            "database": "lake",
            "source": {"kind": "files", "paths": [str(inbox / "*.jsonl")]},
            "defaults": {"buckets": 4},
            "spark": {"conf": {"spark.sql.shuffle.partitions": "4"}},
        }
    )
    from lakecompact.spark import create_session

    spark = create_session(config, archive_options=archive_options, one_shot=True)
    say(f"demo: lake at {root / 'warehouse'}, events from {EXAMPLES}")

    say("\n== 1. land the first events and compact them")
    shutil.copy(EXAMPLES / "part-1.jsonl", inbox)
    land(spark, config)
    compact(spark, config)

    say("\n== 2. a connector restart delivers late and duplicate events; land them")
    shutil.copy(EXAMPLES / "part-2.jsonl", inbox)
    land(spark, config)
    say("the view before compaction (base v1 + pending increments):")
    _show(spark)

    say("\n== 3. compact again, and read the tables")
    compact(spark, config)
    _show(spark)
    print_status(status(spark, config))
    say(f"\ndemo: done in {seconds_since(started)}. Query it yourself:")
    say(f"  lakecompact --config <your.toml> sql \"SELECT * FROM lake.public_customers\"  (warehouse = \"{root / 'warehouse'}\")")
    spark.stop()


def _show(spark) -> None:
    for table, key in TABLES.items():
        frame = spark.table(f"lake.{table}").orderBy(key).withColumn("position", _source_position())
        data = [c for c in frame.columns if not c.startswith("__") and c != "position"] + ["__op", "position"]
        say(f"lake.{table}:")
        rows = frame.select(*data).limit(50).collect()  # a demo table of a few rows, printed
        widths = {c: max(len(c), *(len(_cell(r[c])) for r in rows)) if rows else len(c) for c in data}
        say("  " + " | ".join(c.ljust(widths[c]) for c in data))
        for row in rows:
            say("  " + " | ".join(_cell(row[c]).ljust(widths[c]) for c in data))


def _source_position():
    """Where the row's event is in the source's log, as the database names it: a PostgreSQL LSN, a binlog file and
    position (`__position` packs these into one comparable number)."""
    from pyspark.sql import functions as F

    binlog = F.format_string("%s:%d", "__binlog_file", "__binlog_pos")
    binlog = F.when(F.col("__binlog_row") > 0, F.format_string("%s row %d", binlog, "__binlog_row")).otherwise(binlog)
    return (F.when(F.col("__lsn").isNotNull(), F.format_string("lsn %d", "__lsn"))
            .when(F.col("__binlog_file").isNotNull(), binlog)
            .otherwise(F.col("__position").cast("string")))


def _cell(value) -> str:
    text = str(value)
    return text if len(text) <= 32 else text[:29] + "..."
