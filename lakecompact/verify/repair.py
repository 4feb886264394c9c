"""`lakecompact repair`: ask Debezium to send again the keys the latest verify found divergent, through an ad-hoc
incremental snapshot signalled in the connector's signalling table; the rows come back as `r` events and land
like any other (docs/design.md "Repair"). Nothing is written to the lake here. With `wait`, it then watches the
tables' topics until the keys came back (watch.py)."""

from __future__ import annotations

import datetime
import json
import re
import uuid
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakecompact import sql
from lakecompact.config import Config, VerifyConfig
from lakecompact.errors import LakecompactError
from lakecompact.identifiers import qualified
from lakecompact.lake.catalog import Catalog
from lakecompact.naming import verify_table
from lakecompact.report import say, warn
from lakecompact.verify import source, watch
from lakecompact.verify.verify import require_source, text_kind

NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE]-?[0-9]+)?")
KEYS_PER_SIGNAL = 500  # keys named in one signal's filter: a statement of a few tens of KB


@dataclass(frozen=True)
class Repair:
    """What repair did for one table: keys asked for again (in `signals` signals), the statements that make
    Debezium delete from the lake the keys the source no longer has, rows of a keyless table it cannot name."""

    table: str
    asked: int
    signals: int
    statements: tuple[str, ...]  # to run at the source, one per key it no longer has
    keyless_rows: int
    again: tuple[str, ...] = ()  # the keys asked for again, as <t>_verify writes them
    gone: tuple[str, ...] = ()  # the keys of `statements`, likewise


def require_signal_table(verify: VerifyConfig) -> str:
    if not verify.signal_table:
        raise LakecompactError("repair: expected [verify] signal_table: the connector's signalling table "
                               "(its signal.data.collection, e.g. \"public.debezium_signal\"; docs/verify.md)")
    return verify.signal_table


def key_condition(kind: str, columns: list[str], keys: list[list[str]]) -> str:
    """repair_keys.sql.j2: the source's condition naming these keys (each its columns' values as text)."""
    return sql.render("repair_keys.sql.j2", kind=kind, columns=[source.quoted(c, kind) for c in columns], keys=keys)


def snapshot_signal(data_collection: str, condition: str) -> str:
    """The data of Debezium's `execute-snapshot` signal: an incremental snapshot of the rows of one table that meet
    `condition`."""
    return json.dumps({"data-collections": [data_collection], "type": "incremental",
                       "additional-conditions": [{"data-collection": data_collection, "filter": condition}]})


def value_form(data_type: T.DataType) -> str:
    """How repair_delete.sql.j2 writes a lake value of this type back at the source."""
    kind, group = text_kind(data_type)
    if kind in ("boolean", "binary"):
        return kind
    return "number" if group in ("number", "float") else "text"


def delete_statement(kind: str, table: str, lake_row: dict, forms: dict[str, str], condition: str) -> str:
    """repair_delete.sql.j2: the lake's row inserted and deleted again at the source, so that Debezium sends its
    delete (an incremental snapshot sends only rows that exist)."""
    names = list(lake_row)
    values = []
    for name in names:
        form, text = forms.get(name, "text"), lake_row[name]
        if form == "number" and text is not None and not NUMBER.fullmatch(text):
            form = "text"  # NaN, Infinity: quoted, as the database spells them
        values.append((text, form))
    return sql.render("repair_delete.sql.j2", kind=kind, table=source.quoted(table, kind),
                      columns=[source.quoted(n, kind) for n in names], values=values, condition=condition)


def repair(spark: SparkSession, config: Config, tables: list[str] | None = None, *, wait: int = 0) -> list[Repair]:
    """Signal Debezium for the keys of the tables' latest verify (default: every table); with `wait` seconds,
    watch the topics until they came back (watch.KeysNotBack when some did not)."""
    verify = require_source(config)
    signal_table = require_signal_table(verify)
    catalog = Catalog(spark, config)
    tables = tables or catalog.tables()
    unverified = [t for t in tables if not catalog.storage.exists(catalog.paths(t).verified)]
    if unverified:  # before any signal: a repair does all its tables or none
        raise LakecompactError(f"repair: no verify yet of {', '.join(unverified)}; run 'lakecompact verify' first")
    since = watch.positions(spark, config, tables) if wait else None  # before any signal: what they make is after
    repairs = [_repair_one(spark, config, catalog, table, verify, signal_table) for table in tables]
    asked = sum(r.asked for r in repairs)
    if asked:
        say(f"repair: asked Debezium for {asked} keys again in {sum(r.signals for r in repairs)} signals; once "
            "they are landed (land, compact), verify again")
    if wait:
        watch.watch(spark, config, since, [watch.Wanted(catalog.require(r.table), r.again, r.gone) for r in repairs],
                    wait)
    return repairs


def _repair_one(spark: SparkSession, config: Config, catalog: Catalog, table: str, verify: VerifyConfig,
                signal_table: str) -> Repair:
    schema = catalog.require(table)
    latest = catalog.storage.read_json(catalog.paths(table).verified)
    if not latest["divergent"]:
        say(f"repair {table}: the latest verify ({latest['verified_at']}) found nothing to repair")
        return Repair(table, 0, 0, (), 0)
    verified_at = datetime.datetime.fromisoformat(latest["verified_at"])
    found = (spark.table(qualified(config.database, verify_table(table)))
             .where(F.col("verified_at") == F.lit(verified_at)))
    name, kind = source.source_table(schema, config.table(table)), verify.jdbc_kind
    if not schema.key:
        rows = found.agg(F.sum("copies")).first()[0] or 0  # one row
        warn(f"repair {table}: a table without a key cannot be snapshotted row by row; {rows} rows differ (in "
             f"{verify_table(table)}); snapshot the whole table again to repair it")
        return Repair(table, 0, 0, (), rows)
    key = list(schema.key)
    forms = {f.name: value_form(f.dataType) for f in catalog.table(table).schema.fields}
    binary = sorted(name for name in key if forms[name] == "binary")
    if binary:
        raise LakecompactError(f"repair {table}: key column(s) {binary} are binary; expected a key that a filter can "
                               "name in text")
    # the divergent keys only, not rows: the signal's filter names each of them
    again_keys = tuple(r["key"] for r in found.where(F.col("kind") != "extra in the lake").select("key").collect())
    gone_rows = found.where(F.col("kind") == "extra in the lake").select("key", "lake_row").collect()
    again = [json.loads(k) for k in again_keys]
    gone = [(json.loads(r["key"]), json.loads(r["lake_row"])) for r in gone_rows]
    signals = _signal(spark, verify, signal_table, name, key, again) if again else 0
    if again:
        say(f"repair {table}: asked for {len(again)} keys of {name} again ({signals} execute-snapshot signals in "
            f"{signal_table})")
    statements = tuple(delete_statement(kind, name, lake_row, forms, key_condition(kind, key, [values]))
                       for values, lake_row in gone)
    if statements:
        say(f"repair {table}: {len(gone)} keys the source no longer has are still in the lake; Debezium sends no "
            "delete for a row that is gone: run at the source, for each:")
        for statement in statements:
            say(statement)
    return Repair(table, len(again), signals, statements, 0, again_keys, tuple(r["key"] for r in gone_rows))


def _signal(spark: SparkSession, verify: VerifyConfig, signal_table: str, data_collection: str, key: list[str],
            keys: list[list[str]]) -> int:
    """The execute-snapshot signals for these keys, inserted into the signalling table in one transaction."""
    statement = sql.render("debezium_signal.sql.j2", signal_table=source.quoted(signal_table, verify.jdbc_kind))
    chunks = [keys[i:i + KEYS_PER_SIGNAL] for i in range(0, len(keys), KEYS_PER_SIGNAL)]
    connection = source.connection(spark, verify)
    try:
        connection.setAutoCommit(False)
        prepared = connection.prepareStatement(statement)
        for chunk in chunks:
            prepared.setString(1, str(uuid.uuid4()))
            prepared.setString(2, "execute-snapshot")
            prepared.setString(3, snapshot_signal(data_collection, key_condition(verify.jdbc_kind, key, chunk)))
            prepared.executeUpdate()
        connection.commit()
    except Py4JJavaError as error:
        raise source.unreadable(f"repair: signalling {data_collection} through {signal_table}", error) from None
    finally:
        connection.close()
    return len(chunks)
