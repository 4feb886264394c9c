"""The lakecompact CLI, run directly (local[*], not spark-submit), with its warehouse on the stack's S3 and its
event files on the local disk, as a new user first tries it: two tables landed in two batches and compacted
twice (the second compaction of a table used to die renaming its state file onto an existing one), a third
compaction finds nothing pending, and both views equal the source model. lakecompact puts the stack's s3a jars on
the class paths itself; the files source reads local paths beside an s3a:// warehouse."""
from __future__ import annotations

import random
import uuid

import pytest

from tests.e2e.test_stack_s3_cluster import st  # noqa: F401 - the fixture: the stack's S3 (and cluster) up
from tests.semantics.reference import expected_view
from tests.support.databases import database_name
from tests.test_cli import lakecompact as command
from tests.test_run import Source, deliver, read_views

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

TABLES = ("public_items", "public_orders")


def test_land_and_compact_twice_with_the_warehouse_on_s3_and_the_events_on_the_local_disk(st, tmp_path):  # noqa: F811
    st.up(components=["metastore", "s3"])
    database, run = database_name(), uuid.uuid4().hex[:10]
    events = tmp_path / "events"
    events.mkdir()
    config = tmp_path / "lake.toml"
    config.write_text(
        f'warehouse = "s3a://{st.S3_BUCKET}/{run}/warehouse"\ndatabase = "{database}"\n'
        f'[metastore]\nuri = "{st.METASTORE_URI}"\n'
        f'[s3]\nendpoint = "{st.S3_ENDPOINT}"\nregion = "{st.S3_REGION}"\npath_style_access = true\n'
        f'access_key = "{st.S3_ACCESS_KEY}"\nsecret_key = "{st.S3_SECRET_KEY}"\n'
        f'[source]\nkind = "files"\npaths = ["{events}/*.jsonl"]\n'
        '[defaults]\nbuckets = 2\n[spark.conf]\n"spark.sql.shuffle.partitions" = "2"\n'
    )
    rng = random.Random(56)
    sources = {table: Source(f"pg.{table.replace('_', '.', 1)}", rng) for table in TABLES}
    positions = iter(range(100, 100_000, 7))
    for round_ in (1, 2):
        lines = [line for key in range(1, 9) for source in sources.values()
                 for line in source.change(key, next(positions))]
        deliver(events, f"round-{round_}", lines)
        landed = command(config, "land")
        assert landed.returncode == 0, landed.stderr
        assert f"land: batch {round_}: {len(lines)} events in" in landed.stdout, landed.stdout
        compacted = command(config, "compact")
        assert compacted.returncode == 0, compacted.stderr
        for table in TABLES:
            assert f"compact {table}: base v{round_ - 1} -> v{round_}:" in compacted.stdout, compacted.stdout
    again = command(config, "compact")
    assert again.returncode == 0, again.stderr
    assert all(f"compact {table}: nothing pending (base v2)" in again.stdout for table in TABLES), again.stdout
    seen = read_views(config, database, TABLES)
    for table, source in sources.items():
        assert seen[table] == expected_view(source.model), table
    assert "Traceback" not in landed.stderr + compacted.stderr + again.stderr
