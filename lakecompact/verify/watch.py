"""repair's proof that Debezium acted: the tables' topics, read from where they ended before repair signalled and
polled until each key it waits for came back (a key asked for again as a snapshot's read, a key the source no
longer has as its delete) or the time ran out (docs/verify.md "Did Debezium act?")."""

from __future__ import annotations

import datetime
import functools
import json
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from lakecompact import sql
from lakecompact.config import Config
from lakecompact.errors import LakecompactError, SchemaError
from lakecompact.lake.connect import avro_reader_schema, avro_wire
from lakecompact.lake.model import TableSchema
from lakecompact.landing import avro_values, decode, kafka
from lakecompact.naming import table_for_topic
from lakecompact.report import say
from lakecompact.schema.registry import Registry, RegistryError
from lakecompact.verify.verify import text_kind

POLL_SECONDS = 2  # between two reads of what is new on the topics
PROGRESS_SECONDS = 30  # a line at least this often while nothing new comes back
SHOWN = 10  # keys named per table that did not come back


class KeysNotBack(LakecompactError):
    """Keys repair waited for did not come back in time: exit status 1, as verify's differences."""

    exit_code = 1


@dataclass(frozen=True)
class Wanted:
    """The keys repair waits for of one table, as verify wrote them in <t>_verify: asked for again (back as an `r`
    event), and gone from the source (back as the `d` event of the statement repair printed)."""

    schema: TableSchema
    again: tuple[str, ...]
    gone: tuple[str, ...]

    @property
    def keys(self) -> int:
        return len(self.again) + len(self.gone)


def positions(spark: SparkSession, config: Config, tables: list[str]) -> dict[str, int] | None:
    """Where the tables' topics end now ({"topic:partition": offset}), read before repair signals: whatever its
    signals make comes after. None without a Kafka source."""
    if config.source.kind != "kafka":
        return None
    return {b.name: b.end for b in _bounds(spark, config, tables)}


def watch(spark: SparkSession, config: Config, since: dict[str, int] | None, wanted: list[Wanted],
          seconds: int) -> None:
    """Poll the tables' topics from `since` until every wanted key came back, for up to `seconds`; say per table
    how many came back and which did not. KeysNotBack when some did not."""
    wanted = [w for w in wanted if w.keys]
    if not wanted:
        return
    if since is None:
        say(f"repair: the source is {config.source.kind}, not Kafka: cannot check that Debezium sent the keys again")
        return
    total = sum(w.keys for w in wanted)
    back: dict[str, set[str]] = {w.schema.table: set() for w in wanted}
    gone = sum(len(w.gone) for w in wanted)
    say(f"repair: waiting up to {seconds}s for the {total} keys to come back on the topics"
        + (f" ({gone} as the deletes of the printed statements: run them meanwhile)" if gone else ""))
    started = said = time.monotonic()
    shown = 0
    while True:
        since = _poll(spark, config, since, wanted, back)
        count, waited = sum(map(len, back.values())), time.monotonic() - started
        if count == total or waited >= seconds:
            break
        if count != shown or time.monotonic() - said >= PROGRESS_SECONDS:
            shown, said = count, time.monotonic()
            say(f"repair: {count} of {total} keys back after {waited:.0f}s")
        time.sleep(min(POLL_SECONDS, seconds - waited))
    missed = 0
    for w in wanted:
        not_back = ([k for k in w.again if k not in back[w.schema.table]]
                    + [f"{k} (delete)" for k in w.gone if k not in back[w.schema.table]])
        missed += len(not_back)
        more = f" and {len(not_back) - SHOWN} more" if len(not_back) > SHOWN else ""
        say(f"repair {w.schema.table}: {w.keys - len(not_back)} of {w.keys} keys came back"
            + (f"; not: {', '.join(not_back[:SHOWN])}{more}" if not_back else ""))
    if missed:
        raise KeysNotBack(f"repair: {missed} of {total} keys did not come back within {seconds}s; run repair again "
                          "(a signal written before the connector read its position is never seen: docs/verify.md "
                          "\"Did Debezium act?\")")


def _bounds(spark: SparkSession, config: Config, tables) -> list[kafka.PartitionBounds]:
    return [b for b in kafka.partition_bounds(spark, config.source) if table_for_topic(b.topic, config) in tables]


def _poll(spark: SparkSession, config: Config, since: dict[str, int], wanted: list[Wanted],
          back: dict[str, set[str]]) -> dict[str, int]:
    """Read once what is new on the tables' topics since `since`, and add the keys that came back to `back`;
    where the topics were read to."""
    ranges = {}
    for bounds in _bounds(spark, config, {w.schema.table for w in wanted}):
        start = since.get(bounds.name, bounds.begin)  # a partition added since: from its beginning
        if bounds.end > start:
            ranges[bounds.name] = {"start": start, "end": bounds.end}
    if not ranges:
        return since
    topics = {name.rsplit(":", 1)[0] for name in ranges}
    messages = decode.split_message(kafka.read(spark, config.source, ranges)).persist()  # read by every table
    try:
        for w in wanted:
            table = w.schema.table
            own = sorted(t for t in topics if table_for_topic(t, config) == table)
            rows = table_events(config, messages, w.schema, own)
            if rows is not None:
                back[table] |= keys_back(spark, rows, list(w.schema.key), [k for k in w.again if k not in back[table]],
                                         [k for k in w.gone if k not in back[table]])
    finally:
        messages.unpersist()
    return {**since, **{name: bounds["end"] for name, bounds in ranges.items()}}


def table_events(config: Config, messages: DataFrame, schema: TableSchema, topics: list[str]) -> DataFrame | None:
    """The table's events among split messages (decode.split_message) of its topics, decoded as `land` decodes
    them but without evolving the table (repair writes nothing to the lake): its key columns and `__op`. None when
    there are none."""
    events = messages.where(F.col("__kafka_topic").isin(*topics) & F.col("__has_value"))
    groups = (events.groupBy("__kafka_topic", "value_schema_hash")
              .agg(F.first("value_schema", ignorenulls=True).alias("value_schema"),
                   F.first("value_keys", ignorenulls=True).alias("value_keys"))
              .collect())  # one row per topic and schema
    placeholder = config.table(schema.table).toast_placeholder
    landed_at = datetime.datetime.now(datetime.UTC).isoformat()  # not read: decode_events wants one
    decoded = []
    for group in groups:
        try:
            shape, writer = _shape(config, group)
        except (SchemaError, RegistryError):  # land quarantines these events: no row of theirs lands
            continue
        if shape.kind == "skip":
            continue
        these = events.where((F.col("__kafka_topic") == group["__kafka_topic"])
                             & F.col("value_schema_hash").eqNullSafe(group["value_schema_hash"]))
        if writer is not None:
            rows = avro_values.decode_events(these, json.dumps(avro_reader_schema(writer)), shape, schema, placeholder,
                                             landed_at)
        else:
            rows = decode.decode_events(these, shape, schema, placeholder, landed_at)
        decoded.append(rows.select(*schema.key, "__op"))
    return functools.reduce(DataFrame.unionByName, decoded) if decoded else None


def _shape(config: Config, group: Row) -> tuple[decode.MessageShape, dict | None]:
    """How a group's values are laid out, as land classifies them, and an Avro group's writer schema."""
    schema_hash, topic = group["value_schema_hash"], group["__kafka_topic"]
    if schema_hash and schema_hash.startswith(decode.AVRO_PREFIX):
        from lakecompact.schema import avro

        if config.registry is None:
            raise SchemaError("Avro event but no [registry] is configured to resolve its schema id")
        writer = Registry(config.registry).schema_by_id(int(schema_hash[len(decode.AVRO_PREFIX):]))
        return decode.shape_of(avro_wire(avro.connect_schema(writer)), [], topic), writer
    value_schema = json.loads(group["value_schema"]) if group["value_schema"] else None
    return decode.shape_of(value_schema, list(group["value_keys"] or []), topic), None


def keys_back(spark: SparkSession, rows: DataFrame, key: list[str], again: list[str], gone: list[str]) -> set[str]:
    """repair_returned.sql.j2: which keys came back among a table's decoded events (its key columns and `__op`):
    of `again`, those read by a snapshot (`r`); of `gone`, those deleted (`d`). Only those keys reach the driver.

    Any snapshot's read counts: each sends the row as the source holds it now, which is what repair asked for."""
    if not again and not gone:
        return set()
    kinds = [(name, text_kind(rows.schema[name].dataType)[0]) for name in key]  # as verify writes the lake's key
    asked = spark.createDataFrame([(k, "r") for k in again] + [(k, "d") for k in gone], "key STRING, op STRING")
    found = sql.query(spark, "repair_returned.sql.j2", {"events": "{events}", "asked": "{asked}", "key": kinds},
                      events=rows, asked=asked)
    return {row["key"] for row in found.collect()}
