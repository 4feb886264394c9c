"""`lakecompact land`: new events into one increment batch per table, exactly once.

Protocol (docs/design.md "Landing protocol"): the batch's input is fixed first in an intent file; every table's
increment is written to its final folder (overwritten on a rerun) and registered in the metastore;
then the source positions are recorded in a new state file. A crash anywhere before that last write
reruns the same batch from the same intent, which rewrites the same folders: nothing lost, nothing doubled.
This file is the batch: its input, the one-pass scans and the careful way, the commit order. What each topic's
events become is `topic_schemas.py`; the writes of increments and quarantine are `increments.py`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from concurrent import futures
from concurrent.futures import Future
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F

from lakecompact import crashpoints
from lakecompact.config import Config
from lakecompact.errors import LakecompactError
from lakecompact.lake.catalog import UNPLACED, Catalog
from lakecompact.lake.model import TableSchema
from lakecompact.lake.storage import VersionedState, exclusive_lock, folder_stats
from lakecompact.lake.view_definition import refresh_view
from lakecompact.landing import avro_values, decode, files
from lakecompact.landing.increments import (
    QUARANTINE_SCHEMA,
    IncrementWriter,
    decode_rejects,
    line_quarantine,
    truncate_rows,
    union_all,
    with_reason,
)
from lakecompact.landing.intent import LandIntent, Requeue
from lakecompact.landing.topic_schemas import NOT_A_ROW_EVENT, GroupShape, TopicSchemas
from lakecompact.naming import table_for_topic
from lakecompact.report import say, seconds_since, warn
from lakecompact.schema import apply

# one-pass tables written at once by a land (docs/design.md "Landing protocol")
SCANS_SIDE_BY_SIDE = 4
# a Kafka batch's last offsets of each partition sampled besides its first lines, for the schema versions they show
LAST_SAMPLED = 100
NO_SCHEMA = "no schema known for this topic: its events carry none, and no earlier event or registry gave one"


@dataclass
class LandReport:
    batch: int | None = None
    events_in: int = 0
    rows_out: dict[str, int] = field(default_factory=dict)
    quarantined: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    # truncates of tables not made, as their key is not known yet (docs/design.md "Keys and keyless tables"):
    # held by this batch, and held by earlier ones and landed by this one (in its rows out). So events in +
    # held_landed = rows out + quarantined + skipped + held.
    held: dict[str, int] = field(default_factory=dict)
    held_landed: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Messages:
    """A batch's events (its lines that are events): as kept in memory for decoding (decode.without_texts), and
    as they came, read again from the source (planned, even, only) for what is quarantined."""

    kept: DataFrame
    as_came: Callable[[], DataFrame]


@dataclass(frozen=True)
class TopicRows:
    """One topic's events of a batch, decoded for its table."""

    table: str
    rows: DataFrame | None  # decoded (from the batch in memory): those without a `__reason` to the increment
    # the same decoded from the messages as they came, planned only when needed: those with one to the quarantine
    rows_as_came: Callable[[], DataFrame] | None
    rejected: list[DataFrame]  # events that could not be decoded, to the table's quarantine, each with its reason
    tombstones_kept: bool  # its Kafka tombstones are in `rejected` (deletes that cannot be placed), not skipped
    held: bool = False  # truncates of a table not made, as its key is not known yet: held, not landed


@dataclass(frozen=True)
class PendingIncrement:
    """A table's increment written in one pass, committed by `commit` (in topic order, with the others)."""

    table: str
    location: str
    commit: Callable[[], None]


class _TableOfBothWays(Exception):
    """Topics of one table would land both in one pass and the careful way: two increments of a batch."""

    def __init__(self, tables: list[str]):
        super().__init__(", ".join(tables))
        self.tables = tables


@dataclass(frozen=True)
class OnePass:
    """One topic landed in one scan (`Landing._land_as_written`): its form, its table and increment folder, and
    how its events decode."""

    written: decode.Written
    table: str
    location: str
    schema: TableSchema
    placeholder: str
    landed_at: str
    decoder: Callable[[DataFrame], DataFrame]  # the careful way's, of the events' group (TopicSchemas.decoder)

    def flagged(self, raw: DataFrame) -> DataFrame:
        if self.written.avro_id is not None:
            return avro_values.as_written(raw, self.written.topic, self.written.avro_id)
        fields = list(self.written.shape.fields) or list(self.schema.fields)
        return decode.as_written(raw, self.written, fields, decode.decode_key_wire(self.written.shape, self.schema))

    def decoded(self, flagged: DataFrame) -> DataFrame:
        if self.written.avro_id is not None:  # decoded from the value's bytes, as the careful way decodes them
            return self.decoder(flagged)
        return decode.decode_events(flagged, self.written.shape, self.schema, self.placeholder, self.landed_at,
                                    parsed=True)


class Landing:
    def __init__(self, spark: SparkSession, config: Config):
        self.spark, self.config = spark, config
        self.catalog = Catalog(spark, config)
        self.storage = self.catalog.storage
        self.state = VersionedState(self.storage, self.catalog.database_paths.land_state)
        self.intent_path = self.catalog.database_paths.land_intent
        self.schemas = TopicSchemas(self.catalog, config)
        self.writer = IncrementWriter(spark, self.catalog)
        self._database: Future[None] | None = None  # ensure_database, while a run plans and reads its batch
        self._prepared = False  # _prepare done

    def run(self, requeue: str | None = None, *, table: str | None = None, quiet_when_idle: bool = False) -> LandReport:
        """Land what is new at the source, or (`requeue`) what that table's quarantine holds; one lander at a time.
        `table`: only what is new on the topics of that table. `quiet_when_idle`: say nothing when nothing is
        new (`run` lands every few seconds)."""
        if table:
            check_one_table_landing(self.config)
        # planned and read meanwhile (files and Spark jobs only): a new process's first metastore call takes seconds
        self._database = database = self.catalog.ensure_database_meanwhile()
        lock = self.catalog.database_paths.land_lock
        try:
            with exclusive_lock(self.storage, lock, f"database {self.config.database} is being landed into",
                                lease_seconds=self.config.locks.lease_seconds):
                return self._run(requeue, table, quiet_when_idle)
        finally:
            futures.wait([database])  # its error is raised where the run needs the database, not over another

    def _metastore_ready(self) -> None:
        """Before the run's first metastore call: the database exists, and the views are this version's."""
        if self._database is not None:
            database, self._database = self._database, None
            database.result()
            self._refresh_views()

    def _run(self, requeue: str | None, table: str | None, quiet_when_idle: bool) -> LandReport:
        started = time.monotonic()
        number, state = self.state.latest()
        state = state or {"batch": 0, "files": {}, "kafka": {}}
        intent = self._pending_intent(state)
        rerun = intent is not None
        if intent:
            say(f"land: batch {intent.batch} was interrupted; landing the same input again")
        else:
            intent = self._plan_requeue(state, requeue) if requeue else self._plan(state, table)
            if intent is None:
                self._metastore_ready()
                if not quiet_when_idle:
                    say(f"land: nothing new to land ({seconds_since(started)})")
                return LandReport()
            self.storage.write_json(self.intent_path, intent.to_json(), overwrite=True)
            crashpoints.reached("intent")
        try:
            report = self._land(intent, rerun=rerun)
        except Exception as exc:
            if files.GREW_WHILE_READ not in str(exc):
                raise
            say(f"land: batch {intent.batch}: a file grew while it was read; reading the lines planned by number")
            report = self._land(intent, rerun=True, one_pass=False)
        state = self._advance(state, intent)
        self.state.write(number + 1, state)
        crashpoints.reached("offsets-recorded")
        for landed in report.held_landed:
            self.writer.release_held_truncates(landed)
        self.state.prune(keep=20)
        self._release_requeued(intent)
        self.storage.delete(self.intent_path)
        total = sum(report.rows_out.values())
        say(
            f"land: batch {intent.batch}: {report.events_in} events in, {total} rows out to "
            f"{len(report.rows_out)} table(s), {sum(report.quarantined.values())} quarantined, "
            f"{report.skipped} skipped"
            + (f", {sum(report.held.values())} held" if report.held else "")
            + (f" ({sum(report.held_landed.values())} of the rows out held before)" if report.held_landed else "")
            + f", in {seconds_since(started)}"
        )
        return report

    def _refresh_views(self) -> None:
        """Every land, with or without anything new, brings the views of a lake made by an earlier version up
        to this version's SQL."""
        for table in self.catalog.tables():
            schema = self.catalog.schema(table)
            if schema is not None and refresh_view(self.catalog, schema):
                say(f"  {self.config.database}.{table}: view created again with this version's SQL")

    def dry_run(self, table: str | None = None) -> list[dict]:
        """What `land` (`--table`) would land now, per topic, without writing anything (no intent, table, file or
        offset): {topic, table, new_table, events, tombstones}, and a row of topic None for lines that are no event."""
        started = time.monotonic()
        if table:
            check_one_table_landing(self.config)
        _, state = self.state.latest()
        state = state or {"batch": 0, "files": {}, "kafka": {}}
        intent = self._pending_intent_of(state) or self._plan(state, table)
        if intent is None:
            say(f"land --dry-run: nothing new to land ({seconds_since(started)})")
            return []
        groups, not_events, _ = self._groups(decode.split_message(self._read(intent)))
        rows = []
        for named, topics in _by_table(groups, self.config):
            rows += [{"topic": topic, "table": named, "new_table": self.catalog.schema(named) is None,
                      "events": sum(g.events for g in topic_groups),
                      "tombstones": sum(g.events - g.values for g in topic_groups)} for topic, topic_groups in topics]
        if not_events:
            rows.append({"topic": None, "table": UNPLACED, "new_table": False, "events": not_events, "tombstones": 0})
        for row in rows:
            table = f"{self.config.database}.{row['table']}" + (" (a new table)" if row["new_table"] else "")
            source = (f"{row['events']} lines that are no event (quarantined)" if row["topic"] is None
                      else f"{row['topic']}: {row['events']} events ({row['tombstones']} Kafka tombstones)")
            say(f"  {table} <- {source}")
        say(f"land --dry-run: batch {intent.batch} would read {sum(r['events'] for r in rows)} events; "
            f"nothing written, in {seconds_since(started)}")
        return rows

    # -- the batch's input -----------------------------------------------------------------------
    def _pending_intent(self, state: dict) -> LandIntent | None:
        intent = self._pending_intent_of(state)
        if intent is None and self.storage.exists(self.intent_path):  # committed; only its clean-up was lost
            self.writer.release_all_landed_held_truncates(state["batch"])
            self._release_requeued(LandIntent.from_json(self.storage.read_json(self.intent_path)))
            self.storage.delete(self.intent_path)
        return intent

    def _pending_intent_of(self, state: dict) -> LandIntent | None:
        """The intent of a batch that was interrupted (to be landed again as it is), or None."""
        if not self.storage.exists(self.intent_path):
            return None
        intent = LandIntent.from_json(self.storage.read_json(self.intent_path))
        return intent if intent.batch > state["batch"] else None

    @staticmethod
    def _new_intent(state: dict) -> LandIntent:
        return LandIntent.new(state["batch"] + 1)

    def _plan_requeue(self, state: dict, table: str) -> LandIntent | None:
        """The quarantine folders of one table, to land again as a batch of their own."""
        self.catalog.require(table)
        root = self.catalog.paths(table).quarantine
        folders = sorted(f"{root}/{name}" for name in self.storage.list_names(root) if name.startswith("batch="))
        if not folders:
            say(f"requeue {table}: its quarantine is empty")
            return None
        say(f"requeue {table}: landing {len(folders)} quarantined batch(es) again")
        return self._new_intent(state).reading(requeue=Requeue(table, tuple(folders)))

    def _release_requeued(self, intent: LandIntent) -> None:
        """Once the batch is committed, the requeued folders go: what failed again is in the new batch's folder."""
        for folder in intent.requeue.folders if intent.requeue is not None else ():
            self.storage.delete(folder)

    def _plan(self, state: dict, table: str | None = None) -> LandIntent | None:
        intent = self._new_intent(state)
        if self.config.source.kind == "files":
            ranges = files.plan(self.spark, self.storage, self.config.source.paths, state["files"])
            if not ranges:
                return None
            return intent.reading(files=tuple(ranges))
        from lakecompact.landing import kafka

        wanted = None if table is None else (lambda topic: table_for_topic(topic, self.config) == table)
        offsets = kafka.plan(self.spark, self.config.source, state["kafka"], wanted)
        if not offsets:
            return None
        return intent.reading(kafka=offsets)

    def _advance(self, state: dict, intent: LandIntent) -> dict:
        landed_files = dict(state["files"])
        for r in intent.files or ():
            landed_files[r.path] = {"lines": r.end, "size": r.size}
        kafka_offsets = dict(state["kafka"])
        for topic_partition, bounds in (intent.kafka or {}).items():
            kafka_offsets[topic_partition] = bounds["end"]
        return {"batch": intent.batch, "files": landed_files, "kafka": kafka_offsets}

    def _read(self, intent: LandIntent, unnumbered: list[files.FileRange] | None = None) -> DataFrame:
        """The batch's raw events. `unnumbered` (of files.unchanged_whole): ranges whose lines are read without
        numbers, so their `__origin` is null."""
        if intent.requeue is not None:
            quarantined = self.spark.read.schema(QUARANTINE_SCHEMA).parquet(*intent.requeue.folders)
            return quarantined.select(
                *decode.RAW_COLUMNS, F.lit(None).cast("string").alias("__line_reason"), F.col("payload").alias("__line")
            )
        if intent.files is not None:
            return files.read(self.spark, list(intent.files), [r for r in unnumbered or () if r in intent.files])
        from lakecompact.landing import kafka

        return kafka.read(self.spark, self.config.source, intent.kafka)

    # -- the batch itself ------------------------------------------------------------------------
    def _land(self, intent: LandIntent, *, rerun: bool, one_pass: bool = True) -> LandReport:
        """`one_pass`: the big files that the batch holds whole, unchanged since planned, are read in one pass
        without numbering their lines (what is landed needs no origins; the quarantine reads the source again).
        `rerun`: an attempt of the batch ran before this one."""
        unnumbered = files.unchanged_whole(self.storage, list(intent.files or ())) if one_pass else []
        self.schemas.made.clear()
        self.writer.new_batch(self.schemas.made, rerun=rerun)
        samples = decode.as_written_samples(self._head(intent, unnumbered))

        def split(raw: DataFrame) -> DataFrame:
            return decode.split_message(raw, samples.values)

        return self._land_read(intent, unnumbered, split, samples)

    def _head(self, intent: LandIntent, unnumbered: list[files.FileRange]) -> DataFrame:
        """The lines the batch's forms are sampled from: the first lines of each topic the input names (read from
        only the input that may hold it), and the first of the input that names none; of a Kafka batch, each
        partition's last ones too (the planner, which notes a file's schema versions, reads no Kafka message)."""
        named, unnamed = intent.topics_named()
        heads = [decode.head(self._read(intent.of_topics({topic}), unnumbered).where(F.col("__kafka_topic") == topic))
                 for topic in sorted(named)]
        if intent.kafka is not None and named:
            heads.append(self._read(intent.last(LAST_SAMPLED)))
        if unnamed or not heads:
            heads.append(decode.head(self._read(intent, unnumbered)))
        return union_all(heads)

    def _land_read(self, intent: LandIntent, unnumbered: list[files.FileRange],
                   split: Callable[[DataFrame], DataFrame], samples: decode.Samples) -> LandReport:
        """The topics whose events come as their first lines show land in one scan each (`_land_as_written`); the
        rest of the batch, if any is left, the careful way (`_land_careful`)."""
        report = LandReport(batch=intent.batch)
        quarantine: list[tuple[str | None, DataFrame]] = []
        commits, rest = self._land_as_written(intent, unnumbered, samples, report, quarantine)
        known = samples.values
        try:
            self._land_rest(intent, unnumbered, split, known, report, quarantine, commits, rest)
        except _TableOfBothWays as shared:
            # a table takes one increment a batch: its one-pass increment (written, not committed) goes, and the
            # whole batch lands the careful way
            for location in commits.values():
                self.storage.delete(location.location)
            say(f"  {', '.join(shared.tables)}: more topics than those landed in one pass; landing the batch "
                f"the careful way")
            report, quarantine = LandReport(batch=intent.batch), []
            self._land_rest(intent, unnumbered, split, known, report, quarantine, {}, None)
        report.quarantined = self.writer.write_quarantine(quarantine, intent.batch)
        report.held_landed = dict(self.writer.held_taken)
        for table, count in sorted(report.held.items()):
            say(f"  {self.config.database}.{table}: {count} truncate(s) held in batch {intent.batch}: the table is "
                f"made, with them, by the first batch that shows its key or that it has none")
        for table, count in sorted(report.rows_out.items()):
            say(f"  {self.config.database}.{table}: {count} rows landed in batch {intent.batch} (hour {intent.hour})")
        for table, count in sorted(report.quarantined.items()):
            warn(f"{table}: {count} events quarantined in batch {intent.batch}; see: lakecompact quarantine "
                 f"--table {table}")
        return report

    def _land_rest(self, intent: LandIntent, unnumbered: list[files.FileRange],
                   split: Callable[[DataFrame], DataFrame], known: dict[str, str], report: LandReport,
                   quarantine: list[tuple[str | None, DataFrame]], commits: dict[str, PendingIncrement],
                   rest: int | None) -> None:
        """The lines the one-pass scans left (`rest`: their count, None: not counted) landed the careful way, and
        every increment committed, in topic order. Raises _TableOfBothWays, before any commit, when a topic left
        maps to a table landed in one pass."""
        done = sorted(commits)

        def commit_before(topic: str | None) -> None:
            """Commit the one-pass increments of the topics before `topic` (None: all that are left): every table
            of a batch is committed in topic order, whichever way it landed, as a crash between two leaves the
            tables before it registered and those after it not."""
            for written in [t for t in sorted(commits) if topic is None or t < topic]:
                commits.pop(written).commit()

        if rest != 0:
            landed = F.col("__line_reason").isNull() & F.coalesce(F.col("__kafka_topic").isin(*done), F.lit(False))

            def rest_of(raw: DataFrame) -> DataFrame:
                return raw.where(~landed) if done else raw

            # read and parsed once, and kept in memory without the texts only the quarantine reads: what is
            # quarantined (most batches have nothing) is read from the source again, texts and all
            read = decode.without_texts(split(rest_of(self._read(intent, unnumbered)))).persist()
            try:
                self._land_careful(intent, read, unnumbered, lambda: split(rest_of(self._read(intent))), known,
                                   report, quarantine, commit_before, {c.table for c in commits.values()})
            finally:
                read.unpersist()
        else:
            files.require_still_planned(self.storage, unnumbered)
        commit_before(None)

    def _prepare(self) -> None:
        """Before the batch's first table is decoded: the metastore ready, and hooks that failed before fired."""
        if self._prepared:
            return
        self._metastore_ready()
        for table in self.catalog.tables():
            apply.retry_hooks(self.catalog, self.config, table)
        self._prepared = True

    def _land_as_written(
        self, intent: LandIntent, unnumbered: list[files.FileRange], samples: decode.Samples, report: LandReport,
        quarantine: list[tuple[str | None, DataFrame]],
    ) -> tuple[dict[str, PendingIncrement], int | None]:
        """Land each topic whose first lines show its schemas in one scan of the batch (docs/design.md "Landing
        protocol"): each line read once, a value in that form parsed straight into the table's wire struct, the
        rows written, no copy of the batch kept, the counts taken from the same scan. A topic with any event in
        another form (another schema, a message that does not parse whole, a line that is no event) is not
        committed here: it lands whole the careful way, so that each table has one increment a batch. Returns, per
        topic landed, how its increment is committed (written, not yet committed), and the lines left for the
        careful way (None: not counted, all of them)."""
        topics = sorted({*samples.values, *samples.plain, *samples.avro})
        if intent.requeue is not None or not topics:
            return {}, None
        self._prepare()
        plans = [p for topic in topics if (p := self._one_pass_plan(topic, samples, intent))]
        shared = {p.table for p in plans if sum(q.table == p.table for q in plans) > 1}
        plans = [p for p in plans if p.table not in shared]  # one scan writes a table's whole increment
        if not plans:
            return {}, None
        topics = [p.written.topic for p in plans]
        of_some = F.col("__line_reason").isNull() & F.coalesce(F.col("__kafka_topic").isin(*topics), F.lit(False))

        def scan(plan: OnePass) -> tuple[OnePass, LandIntent, dict[str, int], dict[str, int]]:
            # each scan reads only the input that may hold its topic, and counts the lines there of no such topic
            # (a line read by several scans is counted by each: what is left is only compared with 0)
            lines = Observation()
            counts = [F.count(F.when(F.col("__of_topic"), 1)).alias("events"),
                      F.count(F.when(F.col("__tombstone"), 1)).alias("tombstones"),
                      F.count(F.when(F.col("__of_topic") & ~F.col("__fits") & ~F.col("__tombstone"), 1))
                      .alias("misfits"),
                      F.count(F.when(~of_some, 1)).alias("others")]
            own = intent.of_topics({plan.written.topic})
            flagged = plan.flagged(self._read(own, unnumbered)).observe(lines, *counts)
            written = self.writer.write_rows(plan.table, plan.decoded(flagged.where("__fits")), plan.location,
                                             intent.batch)
            return plan, own, written, lines.get

        # the tables' scans side by side: a small table's job leaves cores idle while the driver plans the next
        # one; nothing is committed until every scan is done, then in topic order
        with futures.ThreadPoolExecutor(max_workers=SCANS_SIDE_BY_SIDE, thread_name_prefix="land-scan") as pool:
            scans = list(pool.map(scan, plans))
        files.require_still_planned(self.storage, unnumbered)
        commits: dict[str, PendingIncrement] = {}
        rest = intent.events_apart_from(set(topics))  # the input no scan read
        for plan, own, written, counts in scans:
            rest += counts["others"]
            if counts["misfits"]:
                self.storage.delete(plan.location)  # the topic lands whole the careful way
                rest += counts["events"]
                continue
            rejected = written.pop("rejected")
            commits[plan.written.topic] = PendingIncrement(
                plan.table, plan.location, functools.partial(self.writer.commit, plan.table, intent,
                                                             plan.location, written))
            report.events_in += counts["events"]
            report.skipped += counts["tombstones"]  # of a topic whose deletes come as rows
            report.rows_out[plan.table] = report.rows_out.get(plan.table, 0) + written["rows"]
            if rejected:  # decoded again from the source as it came, texts and origins
                came = plan.decoded(plan.flagged(self._read(own)).where("__fits"))
                quarantine.append((plan.table, decode_rejects(came)))
        return commits, rest

    def _one_pass_plan(self, topic: str, samples: decode.Samples, intent: LandIntent) -> OnePass | None:
        """How `topic`'s events in the form its first lines show land in one scan, its table made or evolved for
        their schema; None when they cannot (no key form known, deletes that come as tombstones alone, a schema
        the table cannot take or the registry does not give, a rerun's increment already written whole, envelopes
        without a schema of a table not made yet): they land the careful way."""
        table = table_for_topic(topic, self.config)
        location = self.catalog.paths(table).increment(intent.hour, intent.batch)
        if self.storage.exists(folder_stats(location)):
            return None
        written = self._written(topic, samples, intent)
        if written is None:
            return None
        schema = self.catalog.schema(table)
        if written.plain and (schema is None or {"schema", "payload"} & set(schema.key)):
            return None  # no schema to read the values with, or a key column the form's probes would shadow
        group = Row(topic=topic, value_schema_hash=written.schema_hash, value_schema=written.value_schema,
                    key_schema=written.key_schema, key_sample=None, value_sample=None, events=0, values=0)
        first = GroupShape(group, written.shapes[0])
        if schema is None:
            configured = self.config.table(table).key is not None
            if not (configured or (written.key_schema if written.avro_id is None else self.schemas.registry_key(topic))):
                # a new table's key comes from the key schema (Avro's: from the registry); events that show none
                # may all be truncates, which the careful way holds until the key is known
                return None
            schema = self.schemas.create_table(table, topic, [first])
        decoder = None
        for taken, shape in enumerate(written.shapes):  # the table evolves through the versions as they come
            outcome = self.schemas.decoder(schema, GroupShape(group, shape), intent.landed_at)
            if isinstance(outcome, str):
                if not taken:
                    return None
                # the versions after it land the careful way, which quarantines what it must, with the reason
                written = decode.Written.of_versions(topic, written.key_schema, list(written.versions[:taken]))
                break
            schema, decoder = outcome
        self.schemas.unplaced_deletes(topic, table, [first], lambda: None)  # records that its deletes come as rows
        return OnePass(written, table, location, schema, self.config.table(table).toast_placeholder,
                       intent.landed_at, decoder)

    def _written(self, topic: str, samples: decode.Samples, intent: LandIntent) -> decode.Written | None:
        """The form the first lines show of `topic`'s events (with the other schema versions the sample and the
        planner saw), when it is one that can land in one pass."""
        if topic in samples.values:
            seen = tuple(dict.fromkeys([*samples.versions[topic], *intent.value_schemas(topic)]))
            return self.schemas.written_with_schema(topic, samples, seen)
        if topic in samples.avro:
            return self.schemas.written_as_avro(topic, samples.avro[topic])
        return decode.Written(topic, None, None, decode.MessageShape("envelope"), plain=True)

    def _land_careful(self, intent: LandIntent, read: DataFrame, unnumbered: list[files.FileRange],
                      came: Callable[[], DataFrame], known: dict[str, str], report: LandReport,
                      quarantine: list[tuple[str | None, DataFrame]],
                      commit_before: Callable[[str], None], one_pass_tables: set[str]) -> None:
        """Land the events of `read` (split and kept in memory) by their (topic, schema) groups into `report`,
        the topics of one table into one increment; what cannot land goes to `quarantine`. `came`: the same events
        as they came (split, texts and origins); `commit_before(topic)` commits what landed in one pass before that
        topic's table. A topic of one of `one_pass_tables` raises _TableOfBothWays, before anything is written."""
        as_came = functools.cache(came)  # planned (its files listed) only for what is quarantined
        groups, not_events, not_event_topics = self._groups(read)  # the pass that reads the batch into memory
        groups = [_with_schema_text(group, known) for group in groups]
        by_table = _by_table(groups, self.config)
        if shared := sorted(table for table, _ in by_table if table in one_pass_tables):
            raise _TableOfBothWays(shared)
        files.require_still_planned(self.storage, unnumbered)
        self._prepare()
        report.events_in += sum(g.events for g in groups)
        is_event = F.col("__line_reason").isNull()
        batch_messages = Messages(read.where(is_event), lambda: as_came().where(is_event))
        for table, topics in by_table:
            commit_before(topics[0][0])
            landed_topics = []
            for topic, topic_groups in topics:
                landed = self._land_topic(topic, topic_groups, batch_messages, intent)
                tombstones = sum(g.events - g.values for g in topic_groups)  # Kafka tombstones
                if landed is None and intent.requeue is not None:  # what is not landed stays in quarantine
                    kept = with_reason(batch_messages.as_came().where(F.col("__kafka_topic") == topic),
                                        NOT_A_ROW_EVENT)
                    quarantine.append((intent.requeue.table, kept))
                elif landed is None:
                    report.skipped += tombstones + sum(g.values for g in topic_groups)
                else:
                    report.skipped += 0 if landed.tombstones_kept else tombstones
                    quarantine += [(table, frame) for frame in landed.rejected]
                    landed_topics.append(landed)
            if not landed_topics:
                continue
            decoded = [landed for landed in landed_topics if landed.rows is not None]
            if decoded and all(landed.held for landed in decoded):
                count, rejected = self.writer.hold_truncates(table, union_all([t.rows for t in decoded]), intent.batch)
                if count:
                    report.held[table] = count
                if rejected:
                    quarantine += [(table, decode_rejects(landed.rows_as_came())) for landed in decoded]
                continue
            # a topic held before another topic of its table made the table: its truncates land with the rows
            rows = [truncate_rows(landed.rows) if landed.held else landed.rows for landed in decoded]
            count, rejected = self.writer.write_increment(table, union_all(rows) if rows else None, intent)
            report.rows_out[table] = report.rows_out.get(table, 0) + count
            if rejected:
                quarantine += [(table, decode_rejects(landed.rows_as_came())) for landed in decoded]
        if not_events:
            # lines that are no event; one whose topic could be read (its bytes not UTF-8) is filed under its topic's
            # table when that table is known (created by this batch too), the others as of no table
            lines = line_quarantine(as_came())
            tables = set(self.catalog.tables())
            placed = {topic: table for topic in sorted(not_event_topics)
                      if (table := table_for_topic(topic, self.config)) in tables}
            for topic, table in placed.items():
                quarantine.append((table, lines.where(F.col("__kafka_topic") == topic)))
            topic_placed = F.coalesce(F.col("__kafka_topic").isin(*placed), F.lit(False)) if placed else F.lit(False)
            quarantine.append((None, lines.where(~topic_placed)))
        # lines that are no event at all came in too (quarantined, under a table or of none): in = out +
        # quarantined + skipped
        report.events_in += not_events

    @staticmethod
    def _groups(read: DataFrame) -> tuple[list[Row], int, set[str]]:
        """One row per (topic, value schema) of the batch's events, with samples to classify it (metadata, few
        rows), in the order they first come; and the number of lines that are no event and the topics read from
        some of them (their bytes not UTF-8), from the same pass."""
        payload = F.col("__has_value")
        rows = (
            read.groupBy(F.col("__line_reason").isNotNull().alias("not_event"),
                         F.col("__kafka_topic").alias("topic"), "value_schema_hash")
            .agg(
                F.first("value_schema", ignorenulls=True).alias("value_schema"),
                F.first("key_schema", ignorenulls=True).alias("key_schema"),
                F.first(F.when(payload, F.json_object_keys("key_json")), ignorenulls=True).alias("key_sample"),
                F.first(F.when(payload, F.col("value_keys")), ignorenulls=True).alias("value_sample"),
                F.count(F.lit(1)).alias("events"),
                F.count(F.when(payload, 1)).alias("values"),
                F.min("__kafka_offset").alias("first_offset"),
                # a truncate has no key, so an event with one is parsed no further
                F.count(F.when(payload & F.col("key_json").isNull()
                               & (F.get_json_object("value_json", "$.op") == "t"), 1)).alias("truncates"),
            )
            .collect()
        )
        # a topic's groups in the order they come: its table is made from the first and evolves through the others
        rows.sort(key=lambda row: (row.topic or "", -1 if row.first_offset is None else row.first_offset))
        lines = [row for row in rows if row.not_event]
        return ([row for row in rows if not row.not_event], sum(row.events for row in lines),
                {row.topic for row in lines if row.topic is not None})

    def _land_topic(self, topic: str, groups: list[Row], messages: Messages, intent: LandIntent) -> TopicRows | None:
        """Decode one topic's events into its table; None when the topic holds no table rows."""
        table = table_for_topic(topic, self.config)
        values = (F.col("__kafka_topic") == topic) & F.col("__has_value")
        events = messages.kept.where(values)

        def events_as_came() -> DataFrame:
            return messages.as_came().where(values)

        shapes = self.schemas.shapes(topic, groups)
        if shapes and all(s.shape is not None and s.shape.kind == "skip" for s in shapes):
            return None
        schema = self.catalog.schema(table)
        held = schema is None and self.schemas.key_unknown(
            table, topic, shapes, lambda group: events.where(_same_schema(group)))
        if schema is None:
            schema = (self.schemas.new_table if held else self.schemas.create_table)(table, topic, shapes)
        if schema is None:  # each group's events with why its schema could not be had
            rejected = [with_reason(events_as_came().where(_same_schema(s.group)), s.error or NO_SCHEMA) for s in shapes]
            return TopicRows(table, None, None, rejected or [with_reason(events_as_came(), NO_SCHEMA)], False)
        decoded, decoders, rejected = [], [], []
        for shaped in shapes:
            outcome = self.schemas.decoder(schema, shaped, intent.landed_at, evolve=not held)
            if isinstance(outcome, str):
                rejected.append(with_reason(events_as_came().where(_same_schema(shaped.group)), outcome))
                continue
            schema, decoder = outcome
            decoded.append(decoder(events.where(_same_schema(shaped.group))))
            decoders.append((decoder, _same_schema(shaped.group)))
        unplaced = None if held else self.schemas.unplaced_deletes(topic, table, shapes, messages.as_came)
        if unplaced is not None:
            rejected.append(unplaced)
        if not decoded:
            return TopicRows(table, None, None, rejected, unplaced is not None)

        def decoded_as_came() -> DataFrame:
            return union_all([decoder(events_as_came().where(group)) for decoder, group in decoders])

        return TopicRows(table, union_all(decoded), decoded_as_came, rejected, unplaced is not None, held)


def _by_table(groups: list[Row], config: Config) -> list[tuple[str, list[tuple[str, list[Row]]]]]:
    """A batch's (topic, value schema) groups by table, then by topic: the tables in the order of their first
    topic, each table's topics in topic order (several topics may name one table: a sharded source)."""
    by_topic: dict[str, list[Row]] = {}
    for group in groups:
        by_topic.setdefault(group.topic, []).append(group)
    by_table: dict[str, list[tuple[str, list[Row]]]] = {}
    for topic, topic_groups in sorted(by_topic.items()):
        by_table.setdefault(table_for_topic(topic, config), []).append((topic, topic_groups))
    return list(by_table.items())


def _with_schema_text(group: Row, known: dict[str, str]) -> Row:
    """A group whose schema was taken as written (decode.split_message) with that schema's text."""
    if group.value_schema_hash != decode.SCHEMA_AS_WRITTEN:
        return group
    return Row(**{**group.asDict(), "value_schema": known[group.topic]})


def _same_schema(group: Row):
    """The events of one group: those with its value schema (hash), or with none."""
    if group.value_schema_hash is None:
        return F.col("value_schema_hash").isNull()
    return F.col("value_schema_hash") == group.value_schema_hash





def land(
    spark: SparkSession, config: Config, requeue: str | None = None, *, table: str | None = None,
    quiet_when_idle: bool = False,
) -> LandReport:
    return Landing(spark, config).run(requeue, table=table, quiet_when_idle=quiet_when_idle)


def check_one_table_landing(config: Config) -> None:
    """`land --table` needs a position per topic: Kafka's offsets are, a file's line count covers every topic in it."""
    if config.source.kind != "kafka":
        raise LakecompactError(
            "land --table: the files source lands each file's new lines together (a file's position covers every "
            "topic in it), so one table cannot land alone; expected source.kind = \"kafka\", or land without --table"
        )


def dry_run(spark: SparkSession, config: Config, table: str | None = None) -> list[dict]:
    return Landing(spark, config).dry_run(table)
