"""`lakecompact verify` on a scenario's lake: once as the pipeline left it, once after changes made at the source
with the connector stopped, which the lake never sees (what each should find, by kind and key)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tests.e2e.support.common import say
from tests.e2e.support.sources import SourceDb

NEW_KEY = 1_000_000  # an accounts key the workload never makes


@dataclass
class Verification:
    equal: dict[str, dict[str, int]]  # per lake table: what verify found on the lake as built (nothing, if right)
    while_writing: dict[str, dict]  # ... while writes went on and the lake landed them: found, buckets, in flight
    damaged: dict[str, dict[str, int]]  # ... after the damage
    differences: dict[str, set[tuple[str, str, tuple[str, ...]]]]  # per table: (kind, key, columns) in <t>_verify
    expected: dict[str, set[tuple[str, str, tuple[str, ...]]]]


def verdicts(spark, config, tables: list[str]) -> list:
    from lakecompact.verify.verify import LakeDiffers, verify

    try:
        return verify(spark, config, tables)
    except LakeDiffers as differs:
        return differs.verdicts


def _found(spark, config, tables: list[str]) -> dict[str, dict[str, int]]:
    return {v.table: {kind: n for kind, n in v.found.items() if n} for v in verdicts(spark, config, tables)}


def verify_config(config, db: SourceDb, settle_seconds: int):
    from lakecompact.config import VerifyConfig

    s = db.settings
    return dataclasses.replace(config, verify=VerifyConfig(
        jdbc_url=db.jdbc_url(), user=s.user, password=s.password, buckets=16, read_partitions=2,
        settle_seconds=settle_seconds))


def lake_tables(db: SourceDb) -> list[str]:
    return [db.lake_table(t) for t in ("accounts", "orders", "audit")]


def _one_value(db: SourceDb, query: str) -> str:
    return db.run(query)[0].strip()


def verify_then_damage(spark, config, db: SourceDb, while_writing: dict[str, dict]) -> Verification:
    """verify on the lake as built; then, the connector gone: an accounts row updated, one deleted, one inserted,
    and an audit row inserted at the source; verify again (what it found while writes went on: `while_writing`).
    The connector never lands the damage: verify waits a few seconds for the lake, then names it."""
    from lakecompact.naming import verify_table

    config = verify_config(config, db, settle_seconds=3)
    tables = lake_tables(db)
    equal = _found(spark, config, tables)

    db.unregister()
    accounts, audit = db.qualified("accounts"), db.qualified("audit")
    updated = _one_value(db, f"SELECT min(id) FROM {accounts};")
    deleted = _one_value(db, f"SELECT max(id) FROM {accounts};")
    db.run(f"UPDATE {accounts} SET score = 12345.25 WHERE id = {updated};\n"
           f"DELETE FROM {accounts} WHERE id = {deleted};\n"
           f"INSERT INTO {accounts} (id, name) VALUES ({NEW_KEY}, 'inserted, never captured');\n"
           f"INSERT INTO {audit} (seq, kind) VALUES (999999, 'uncaptured');\n")
    say(f"{db.kind}: damaged the source with the connector gone: accounts {updated} updated, {deleted} deleted, "
        f"{NEW_KEY} inserted; one audit row inserted")
    damaged = _found(spark, config, tables)
    differences = {}
    for table in tables:
        rows = spark.table(f"`{config.database}`.`{verify_table(table)}`").collect() \
            if spark.catalog.tableExists(f"`{config.database}`.`{verify_table(table)}`") else []
        differences[table] = {(r["kind"], r["key"], tuple(r["columns"])) for r in rows}
    expected = {
        db.lake_table("accounts"): {("different values", f'["{updated}"]', ("score",)),
                                    ("extra in the lake", f'["{deleted}"]', ()),
                                    ("missing in the lake", f'["{NEW_KEY}"]', ())},
        db.lake_table("orders"): set(),
        db.lake_table("audit"): {("missing in the lake", None, ())},
    }
    return Verification(equal, while_writing, damaged, differences, expected)
