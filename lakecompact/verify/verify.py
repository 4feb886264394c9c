"""Each lake table's view against its source table: per bucket of keys first (row count and a checksum of the
rows, both sides normalised alike), then key by key inside the buckets that differ (docs/design.md "Verify")."""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from dataclasses import dataclass
from decimal import Decimal

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.window import Window

from lakecompact import sql
from lakecompact.config import Config, VerifyConfig
from lakecompact.errors import LakecompactError
from lakecompact.identifiers import qualified
from lakecompact.lake.catalog import Catalog
from lakecompact.naming import base_table, increments_table, verify_table
from lakecompact.report import say, warn
from lakecompact.verify import position, source

KINDS = ("missing in the lake", "extra in the lake", "different values")
SETTLE_POLL_SECONDS = 2


class LakeDiffers(LakecompactError):
    """verify found a table of the lake unequal to its source table: exit status 1, as `diff` says it."""

    exit_code = 1

    def __init__(self, message: str, verdicts: list[Verdict]):
        super().__init__(message)
        self.verdicts = verdicts


@dataclass(frozen=True)
class Verdict:
    """One table's verify: rows on each side, the buckets that differed, and what differed, by kind (keys; rows
    for a keyless table)."""

    table: str
    source_table: str
    source_rows: int
    lake_rows: int
    buckets: int
    differing_buckets: int
    found: dict[str, int]
    in_flight: int  # keys that differed, changed at the source after the read began: not counted in `found`
    not_compared: tuple[str, ...]
    seconds: float

    @property
    def equal(self) -> bool:
        return not any(self.found.values())


def text_kind(data_type: T.DataType) -> tuple[str, str]:
    """How verify_rows.sql.j2 writes a value of this type as text, and the group of types that compare with it
    (a MariaDB TINYINT(1) is read as a boolean and landed as a number: both are numbers)."""
    if isinstance(data_type, T.BooleanType):
        return "boolean", "number"
    if isinstance(data_type, T.DecimalType):
        return "decimal", "number"
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return "text", "number"
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "float", "float"
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp", "timestamp"
    if isinstance(data_type, T.DateType):
        return "text", "date"
    if isinstance(data_type, T.BinaryType):
        return "binary", "binary"
    if isinstance(data_type, (T.ArrayType, T.MapType, T.StructType)):
        return "json", "json"
    return "text", "text"


def aligned(source_rows: DataFrame, lake_rows: DataFrame, columns: list[str], key: list[str], table: str
            ) -> tuple[DataFrame, DataFrame, list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """Both sides with the lake's column names, and the columns both can compare: each side's (name, text kind),
    and the columns left out, each with why. A key column that cannot be compared is an error."""
    by_lower = {name.lower(): name for name in source_rows.columns}
    lake_types = {f.name: f.dataType for f in lake_rows.schema.fields}
    source_types = {f.name: f.dataType for f in source_rows.schema.fields}
    source_kinds, lake_kinds, left_out = [], [], []
    for name in columns:
        found = by_lower.get(name.lower())
        lake_kind, lake_group = text_kind(lake_types[name])
        why = "not in the source table" if found is None else None
        if found is not None:
            source_kind, source_group = text_kind(source_types[found])
            if source_group != lake_group:
                why = (f"the source has {source_types[found].simpleString()}, the lake "
                       f"{lake_types[name].simpleString()}")
        if why is not None:
            if name in key:
                raise LakecompactError(f"verify {table}: key column {name}: {why}; expected a key both sides hold "
                                       "alike")
            left_out.append(f"{name} ({why})")
            continue
        source_kinds.append((name, source_kind))
        lake_kinds.append((name, lake_kind))
    names = [name for name, _ in lake_kinds]
    source_side = source_rows.select(*[source_rows[by_lower[n.lower()]].alias(n) for n in names])
    return source_side, lake_rows.select(*names), source_kinds, lake_kinds, left_out


def comparable_rows(spark: SparkSession, rows: DataFrame, kinds: list[tuple[str, str]], key: list[str],
                    buckets: int) -> DataFrame:
    """verify_rows.sql.j2 over one side."""
    return sql.query(spark, "verify_rows.sql.j2", {"rows": "{rows}", "columns": kinds, "key": key,
                                                   "bucket_count": buckets}, rows=rows)


@dataclass(frozen=True)
class Comparison:
    """The buckets of one table compared: each bucket's rows on each side and whether it differs; the source's
    rows in the buckets that differ (in the form both sides share), and how the lake's columns are compared."""

    per_bucket: list
    differing: list[int]
    source_rows: DataFrame
    lake_kinds: list[tuple[str, str]]
    left_out: tuple[str, ...]
    key: list[str]
    buckets: int


def compared_buckets(spark: SparkSession, source_rows: DataFrame, lake_rows: DataFrame, *, table: str,
                     key: list[str], buckets: int) -> Comparison:
    """Both sides reduced to a row count and a checksum per bucket of keys: only those reach the driver."""
    source_side, lake_side, source_kinds, lake_kinds, left_out = aligned(source_rows, lake_rows, list(lake_rows.columns),
                                                                         key, table)
    source_view = comparable_rows(spark, source_side, source_kinds, key, buckets)
    lake_view = comparable_rows(spark, lake_side, lake_kinds, key, buckets)
    per_bucket = sql.query(spark, "verify_buckets.sql.j2", {"source": "{source}", "lake": "{lake}"},
                           source=source_view, lake=lake_view).collect()  # one row per bucket
    differing = sorted(row["bucket"] for row in per_bucket if row["differs"])
    return Comparison(per_bucket, differing, source_view.where(F.col("__bucket").isin(differing)), lake_kinds,
                      tuple(left_out), key, buckets)


def differences_of(spark: SparkSession, comparison: Comparison, lake_rows: DataFrame) -> DataFrame:
    """What differs, key by key, inside the buckets that differed: the source's rows as compared against the lake's
    rows given (the lake as read then, or as it is after it landed more)."""
    names = [name for name, _ in comparison.lake_kinds]
    lake_view = comparable_rows(spark, lake_rows.select(*names), comparison.lake_kinds, comparison.key,
                                comparison.buckets)
    return sql.query(spark, "verify_keys.sql.j2", {
        "source": "{source}", "lake": "{lake}", "buckets": comparison.differing, "names": names,
        "keyless": not comparison.key}, source=comparison.source_rows, lake=lake_view)


def verify_table_rows(spark: SparkSession, source_rows: DataFrame, lake_rows: DataFrame, *, table: str,
                      key: list[str], buckets: int) -> tuple[list, DataFrame | None, tuple[str, ...]]:
    """The buckets (bucket, source_rows, lake_rows, differs) and, when some differ, the differences: the pure part
    of verify, over any two frames of the same table that hold still."""
    comparison = compared_buckets(spark, source_rows, lake_rows, table=table, key=key, buckets=buckets)
    if not comparison.differing:
        return comparison.per_bucket, None, comparison.left_out
    return comparison.per_bucket, differences_of(spark, comparison, lake_rows), comparison.left_out


def in_flight_marked(differences: DataFrame, positions: DataFrame, read_from: int) -> DataFrame:
    """`differences` with `in_flight`: the lake's latest event of the key (positions: __key, __position) is newer
    than the source position the read began at, so the source row compared may be older than the lake's."""
    # a position is where the log's next record starts: a change made after it was read is at it or past it
    changed = positions.select(F.col("__key").alias("key"), (F.col("__position") >= _position(read_from)).alias("newer"))
    return (differences.join(changed, "key", "left")
            .withColumn("in_flight", F.coalesce(F.col("newer"), F.lit(False))).drop("newer"))


def appended_in_flight_marked(spark: SparkSession, comparison: Comparison, lake_rows: DataFrame, read_from: int,
                              read_to: int) -> DataFrame:
    """A keyless table's differences with `in_flight`. It only appends, so the source as read between `read_from`
    and `read_to` holds every row the lake (lake_rows: with `__position`) landed before `read_from`, and none it
    landed after `read_to`: a row missing from the lake up to `read_to`, or extra in the lake up to `read_from`,
    differs; a row the lake landed between the two that the source lacks is in flight."""
    names = [name for name, _ in comparison.lake_kinds]

    def landed_before(at: int) -> DataFrame:  # a change made after `at` was read is at it or past it
        return lake_rows.where(F.col("__position") < _position(at)).select(*names)

    kind = F.col("kind")
    # each is read by two branches of the result: computed once
    late = differences_of(spark, comparison, landed_before(read_to)).localCheckpoint(eager=True)
    extra = (differences_of(spark, comparison, landed_before(read_from)).where(kind == "extra in the lake")
             .localCheckpoint(eager=True))
    flight = late.where(kind == "extra in the lake").join(extra.select("lake_row"), "lake_row", "left_anti")
    return (late.where(kind == "missing in the lake").unionByName(extra).withColumn("in_flight", F.lit(False))
            .unionByName(flight.withColumn("in_flight", F.lit(True))))


def _position(value: int) -> Column:
    return F.lit(Decimal(value)).cast("decimal(38,0)")


def latest_positions(spark: SparkSession, base: DataFrame, increments: DataFrame, key_kinds: list[tuple[str, str]],
                     keys: DataFrame | None) -> DataFrame:
    """verify_positions.sql.j2: each key's latest event in a table's base and increments (the keys named by `__key`
    in `keys`), or with no keys the latest event landed."""
    relations = {"base": base, "increments": increments, **({"keys": keys} if keys is not None else {})}
    return sql.query(spark, "verify_positions.sql.j2",
                     {"key": key_kinds, "keys": None, **{name: "{" + name + "}" for name in relations}}, **relations)


def lake_positions(spark: SparkSession, catalog: Catalog, table: str, key_kinds: list[tuple[str, str]],
                   keys: DataFrame | None) -> DataFrame:
    return latest_positions(spark, catalog.table(base_table(table)), catalog.table(increments_table(table)), key_kinds,
                            keys)


def settled(spark: SparkSession, catalog: Catalog, table: str, read_to: position.Position, seconds: int) -> bool:
    """Wait, up to `seconds`, until the lake has landed an event of the table past `read_to`: every change the
    read could have seen is then in the lake. False when the time ran out."""
    deadline = time.monotonic() + seconds
    say(f"verify {table}: waiting up to {seconds}s for the lake to land past {read_to.text}")
    while True:
        catalog.refresh(base_table(table), increments_table(table))  # another process or thread lands, compacts
        landed = lake_positions(spark, catalog, table, [], None).first()["__position"]  # one row
        if landed is not None and landed >= read_to.value:
            return True
        if time.monotonic() >= deadline:
            warn(f"verify {table}: the lake has not landed past {read_to.text} within {seconds}s (settle_seconds); "
                 "a change it has yet to land shows as a difference")
            return False
        time.sleep(SETTLE_POLL_SECONDS)


def verify_one(spark: SparkSession, config: Config, catalog: Catalog, table: str, verify: VerifyConfig,
               verified_at: datetime.datetime) -> Verdict:
    started = time.monotonic()
    schema = catalog.require(table)
    name = source.source_table(schema, config.table(table))
    key = list(schema.key)
    lake_rows = catalog.table(table).select(*schema.column_names)
    read_from = position.current(spark, verify) if verify.settle_seconds else None
    reading = f"verify {table}: reading {name} from {source.url(verify)}"
    try:
        source_rows = source.read(spark, verify, name, _whole_number_key(lake_rows, key))
        source_rows.schema  # noqa: B018 - asks the database for the table: a missing one fails here
        comparison = compared_buckets(spark, source_rows, lake_rows, table=table, key=key, buckets=verify.buckets)
        if comparison.differing:
            # the differing buckets' source rows, read once more and held: compared again after the lake landed
            # more, they must be the rows as read between the two positions
            comparison = dataclasses.replace(comparison,
                                             source_rows=comparison.source_rows.localCheckpoint(eager=True))
    except (Py4JJavaError, PySparkException) as error:  # the JDBC source's: the connection, the table
        raise source.unreadable(reading, error) from None
    for column in comparison.left_out:
        warn(f"verify {table}: column {column}: not compared")
    found, in_flight = dict.fromkeys(KINDS, 0), 0
    if comparison.differing:
        if read_from is None:
            differences = differences_of(spark, comparison, lake_rows)
        else:
            read_to = position.current(spark, verify)
            settled(spark, catalog, table, read_to, verify.settle_seconds)
            catalog.refresh(base_table(table), increments_table(table))
            lake_now = catalog.table(table)
            if key:
                # its keys and the rows themselves both read it: computed once
                differences = differences_of(spark, comparison, lake_now.select(*schema.column_names)
                                             ).localCheckpoint(eager=True)
                keys = differences.select(F.col("key").alias("__key"))
                kinds = dict(comparison.lake_kinds)
                key_kinds = [(name, kinds[name]) for name in key]  # in the key's order, as verify_rows writes __key
                differences = in_flight_marked(
                    differences, lake_positions(spark, catalog, table, key_kinds, keys), read_from.value)
            else:
                differences = appended_in_flight_marked(spark, comparison, lake_now, read_from.value, read_to.value)
        found, in_flight = _recorded(spark, config, catalog, table, differences, verified_at, verify.shown)
    per_bucket = comparison.per_bucket
    verdict = Verdict(table, name, sum(r["source_rows"] for r in per_bucket),
                      sum(r["lake_rows"] for r in per_bucket), verify.buckets, len(comparison.differing),
                      found, in_flight, comparison.left_out, time.monotonic() - started)
    # what `status` and the metrics of `run` show (lakecompact_verify_divergent_keys), the latest verify's only
    catalog.storage.write_json(catalog.paths(table).verified, {
        "verified_at": verified_at.isoformat(), "divergent": sum(found.values()), "found": found,
        "in_flight": in_flight, "source_rows": verdict.source_rows, "lake_rows": verdict.lake_rows,
        "seconds": round(verdict.seconds, 3)}, overwrite=True)
    return verdict


def _recorded(spark: SparkSession, config: Config, catalog: Catalog, table: str, differences: DataFrame,
              verified_at: datetime.datetime, shown: int) -> tuple[dict[str, int], int]:
    """Append what differs (not what is in flight) to <t>_verify, print `shown` keys of each kind; what was
    found by kind, and how many keys were in flight."""
    if "in_flight" not in differences.columns:
        differences = differences.withColumn("in_flight", F.lit(False))
    differences = differences.localCheckpoint(eager=True)  # computed once: counted, written and shown
    in_flight = differences.where("in_flight").count()
    found = dict.fromkeys(KINDS, 0)
    divergent = differences.where(~F.col("in_flight")).drop("in_flight")
    for row in divergent.groupBy("kind").agg(F.sum("copies").alias("n")).collect():  # at most three rows
        found[row["kind"]] = row["n"]
    if not any(found.values()):
        return found, in_flight
    result = qualified(config.database, verify_table(table))
    (divergent.select(F.lit(verified_at).alias("verified_at"), "*")
     .write.mode("append").format("parquet").option("path", catalog.paths(table).verify_results)
     .saveAsTable(result))
    by_kind_order = ("key", "source_row", "lake_row")
    by_kind = Window.partitionBy("kind").orderBy(*by_kind_order)
    rows = divergent.withColumn("n", F.row_number().over(by_kind)).where(F.col("n") <= shown).collect()
    for row in sorted(rows, key=lambda r: (KINDS.index(r["kind"]), *(r[c] or "" for c in by_kind_order))):
        say(f"  {table}: {row['kind']}: " + _described(row))
    return found, in_flight


def _whole_number_key(lake_rows: DataFrame, key: list[str]) -> str | None:
    """The key column the source is read in ranges of: the key, when it is one whole-number column."""
    if len(key) != 1:
        return None
    kind = lake_rows.schema[key[0]].dataType
    whole = isinstance(kind, T.IntegralType) or (isinstance(kind, T.DecimalType) and kind.scale == 0)
    return key[0] if whole else None


def _described(row) -> str:
    if row["key"] is None:  # keyless: a row and its copies
        return f"{_short(row['source_row'] or row['lake_row'], 200)} ({row['copies']} copies)"
    if row["kind"] != "different values":
        return f"key {row['key']}"
    source_row, lake_row = json.loads(row["source_row"]), json.loads(row["lake_row"])
    return f"key {row['key']}: " + "; ".join(
        f"{c}: source {_short(json.dumps(source_row.get(c)), 60)}, lake {_short(json.dumps(lake_row.get(c)), 60)}"
        for c in row["columns"])


def _in_flight_note(keys: int) -> str:
    return f"; {keys} keys in flight: changed at the source while verify read it, not counted" if keys else ""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def require_source(config: Config) -> VerifyConfig:
    if config.verify is None:
        raise LakecompactError("verify: expected a [verify] section in the config with the source database's "
                               "jdbc_url (docs/verify.md)")
    return config.verify


def verify(spark: SparkSession, config: Config, tables: list[str] | None = None) -> list[Verdict]:
    """Verify the tables (default: every table of the lake); raises LakeDiffers when one differs."""
    source_config = require_source(config)
    catalog = Catalog(spark, config)
    tables = tables or catalog.tables()
    verified_at = datetime.datetime.now(datetime.UTC).replace(microsecond=0)  # aware: the same instant in any zone
    verdicts = []
    for table in tables:
        verdict = verify_one(spark, config, catalog, table, source_config, verified_at)
        verdicts.append(verdict)
        outcome = "equal" if verdict.equal else "DIFFERENT: " + ", ".join(
            f"{n} {kind}" for kind, n in verdict.found.items() if n)
        say(f"verify {config.database}.{table} against {verdict.source_table}: {outcome} ({verdict.source_rows} "
            f"source rows, {verdict.lake_rows} lake rows, {verdict.differing_buckets} of {verdict.buckets} buckets "
            f"differ{_in_flight_note(verdict.in_flight)}) in {verdict.seconds:.1f}s")
    differing = [v.table for v in verdicts if not v.equal]
    if differing:
        raise LakeDiffers(f"verify: {len(differing)} of {len(verdicts)} tables differ from the source: "
                          f"{', '.join(differing)}; what differs is in "
                          f"{', '.join(qualified(config.database, verify_table(t)) for t in differing)} with "
                          f"verified_at = '{verified_at:%Y-%m-%d %H:%M:%S}' (UTC)", verdicts)
    return verdicts
