"""The files source: `kcat -C -J` output, one JSON object per line, read from where the last run stopped."""

from __future__ import annotations

import functools
import glob
import json
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from lakecompact.config import Config
from lakecompact.errors import LakecompactError
from lakecompact.identifiers import struct_type
from lakecompact.lake.paths import DatabasePaths
from lakecompact.lake.storage import LocalFiles, Storage, VersionedState

_KCAT_LINE = struct_type([("topic", "STRING"), ("partition", "INT"), ("offset", "BIGINT"), ("key", "STRING"),
                          ("payload", "STRING")])


@dataclass(frozen=True)
class FileRange:
    """Lines [start, end) of one file (0-based), the unit a batch records so a rerun reads the same lines."""

    path: str
    start: int
    end: int
    size: int
    whole: bool = False  # every line of the file at `size` bytes: it starts at 0, and its last line is complete
    # the topics its lines name at their start as kcat writes them (`topic_named`); None: some line does not
    topics: tuple[str, ...] | None = None
    # (topic, value schema text) its new lines' values start with in Connect's form, in the order they first come
    # (`schema_written`): a hint for the one-pass land, found while planning; not recorded in the intent, so a
    # rerun lands without it, the careful way taking what its sample does not show
    value_schemas: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def to_json(self) -> dict:
        named = {} if self.topics is None else {"topics": list(self.topics)}
        return {"path": self.path, "start": self.start, "end": self.end, "size": self.size, "whole": self.whole,
                **named}

    @staticmethod
    def from_json(value: dict) -> FileRange:
        topics = value.get("topics")
        return FileRange(value["path"], value["start"], value["end"], value["size"], value.get("whole", False),
                         None if topics is None else tuple(topics))

    def may_hold(self, topics: set[str]) -> bool:
        """Whether a line of one of `topics` may be in the range (`read` quarantines a line whose topic is not the
        one its start names)."""
        return self.topics is None or bool(topics & set(self.topics))


def _file_path(spelled: Column | None = None) -> Column:
    """Spark's `_metadata.file_path` (or `spelled`, a column of it) in Hadoop's spelling: URI escapes decoded (a '+'
    stays a '+'), and `file:/`, so it matches the paths the glob listed."""
    escaped = F.regexp_replace(F.col("_metadata.file_path") if spelled is None else spelled, "^file:///", "file:/")
    return F.url_decode(F.replace(escaped, F.lit("+"), F.lit("%2B")))


def _normal(path: str) -> str:
    return path.replace("file:///", "file:/")


GREW_WHILE_READ = "a file planned whole grew while it was read"
TOPIC_NAMED_TWICE = "line names another topic than the one it starts with"
# Files up to this size are read whole, one row per file (one Spark job, exact line numbers for free). Bigger
# ones are streamed in splits: split whole, forty 70 MB files ran an 8 GB driver out of memory.
WHOLE_FILE_BYTES = 8 * 1024 * 1024


def _whole_files(spark: SparkSession, paths: list[str]) -> DataFrame:
    """(path, parts, utf8): each file's text split at every "\\n" (the last part is what follows the last
    newline), and whether the file is valid UTF-8: splitting decodes it, turning other bytes into U+FFFD."""
    text = spark.read.text(paths, wholetext=True)
    return text.select(_file_path().alias("path"), F.split("value", "\n", -1).alias("parts"),
                       F.is_valid_utf8("value").alias("utf8"))


def _text(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Every line as it streams in, split on "\\n" only, as kcat writes them."""
    return spark.read.text(paths, lineSep="\n")


def _streamed(spark: SparkSession, paths: list[str]) -> DataFrame:
    """Every line as it streams in, with the file split it came from and a row id that grows line by line within
    a split."""
    return _text(spark, paths).select(
        _file_path().alias("path"),
        F.col("_metadata.file_block_start").alias("block"),
        F.monotonically_increasing_id().alias("row"),
        F.col("value").alias("line"),
    )


def _streamed_lines(spark: SparkSession, paths: list[str]) -> DataFrame:
    """(path, line_no, line) of big files: a line's number is the lines of the splits before its own plus its
    place in its split, the split sizes coming from a second pass over the same listing (one row per split)."""
    text = _streamed(spark, paths)
    splits = text.groupBy("path", "block").agg(F.count("*").alias("lines"), F.min("row").alias("first_row"))
    earlier = Window.partitionBy("path").orderBy("block").rowsBetween(Window.unboundedPreceding, -1)
    splits = splits.select("path", "block", "first_row",
                           F.coalesce(F.sum("lines").over(earlier), F.lit(0)).alias("lines_before"))
    numbered = text.join(F.broadcast(splits), ["path", "block"])
    return numbered.select("path", (F.col("lines_before") + F.col("row") - F.col("first_row")).alias("line_no"),
                           "line", F.is_valid_utf8("line").alias("utf8"))


def _by_size(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """The files to read whole, and the big ones to stream."""
    return ([p for p, size in sizes.items() if size <= WHOLE_FILE_BYTES],
            [p for p, size in sizes.items() if size > WHOLE_FILE_BYTES])


def _lines(spark: SparkSession, ranges: list[FileRange], unnumbered: list[FileRange]) -> DataFrame:
    """(path, 0-based line number, line, utf8) of every line of the files of the ranges; utf8: the line's bytes
    are UTF-8 (in a file read whole that is not, a line holding U+FFFD is taken for one that was not). The files of
    `unnumbered` (big, each range whole) are streamed in one pass, without numbering their lines (line_no null)."""
    whole, big = _by_size({r.path: r.size for r in ranges})
    parts = []
    if whole:
        lines = _whole_files(spark, whole).select("path", "utf8", F.posexplode("parts").alias("line_no", "line"))
        parts.append(lines.select("path", "line_no", "line",
                                  (F.col("utf8") | ~F.contains("line", F.lit("\ufffd"))).alias("utf8")))
    if big:
        parts.append(_streamed_lines(spark, big))
    if unnumbered:
        parts.append(_unnumbered_lines(spark, unnumbered))
    return functools.reduce(DataFrame.unionByName, parts)


def _unnumbered_lines(spark: SparkSession, ranges: list[FileRange]) -> DataFrame:
    """The lines of files that each range holds whole, without numbers: read so, a file must still be the size it was
    planned at once its lines are read (require_still_planned)."""
    text = _text(spark, [r.path for r in ranges])
    return text.select(_file_path().alias("path"), F.lit(None).cast("bigint").alias("line_no"),
                       F.col("value").alias("line"), F.is_valid_utf8("value").alias("utf8"))


def _complete(line: Column) -> Column:
    return F.json_object_keys(line).isNotNull()


# kcat -J writes the topic first (no spaces; some tools write JSON with them); Kafka topic names are
# [a-zA-Z0-9._-], at most 249 of them
_NAMED_TOPIC = r'^\{[ \t\r]*"topic"[ \t\r]*:[ \t\r]*"([a-zA-Z0-9._-]+)"[ \t\r]*,'
_NAMED_TOPIC_CHARS = 270


def topic_named(line: Column) -> Column:
    """The topic a kcat line names at its start, "" when it does not start so."""
    return F.regexp_extract(F.substring(line, 1, _NAMED_TOPIC_CHARS), _NAMED_TOPIC, 1)


def _topics(named: Column) -> Column:
    """A file's distinct topics (of `named`, each line's `topic_named`), or null when some line names none."""
    return F.when(~F.array_contains(named, F.lit("")), F.array_sort(named))


# kcat writes a value as a JSON string; in Connect's form with its schema it starts so, escaped in the line
_PAYLOAD_FIELD = '"payload":'
_ESCAPED_FORM = '"{\\"schema\\":'
_ESCAPED_PAYLOAD = ',\\"payload\\":'
# a file's value schema texts are a hint: read from every HINT_EVERY-th line (a power of two: a streamed split's
# first line is one), at most HINTED_SCHEMAS of them per file
HINT_EVERY = 64
HINTED_SCHEMAS = 16


def schema_written(line: Column) -> Column:
    """The value schema text, still escaped as in the line, that a kcat line's value starts with in Connect's form
    (`{"schema":` text `,"payload":`); null when it does not. No JSON parse: the line's first `"payload":` with
    its quotes unescaped is kcat's own field (inside a key's or value's text every quote is escaped)."""
    at = F.instr(line, F.lit(_PAYLOAD_FIELD))
    value = F.ltrim(F.substring(line, at + len(_PAYLOAD_FIELD), 1 << 30))
    schema = F.substring(value, len(_ESCAPED_FORM) + 1, 1 << 30)
    end = F.instr(schema, F.lit(_ESCAPED_PAYLOAD))
    return F.when((at > 0) & F.startswith(value, F.lit(_ESCAPED_FORM)) & (end > 0),
                  F.substring(schema, 1, end - 1))


def _schemas_hint(pairs: list | None) -> tuple[tuple[str, str], ...]:
    """(topic, schema text) of `schema_written`'s (topic, escaped text) pairs, unescaped; the land checks that
    each text is a schema."""
    hint = []
    for pair in pairs or ():
        try:
            text = json.loads(f'"{pair.text}"')
        except ValueError:
            continue
        if pair.topic:
            hint.append((pair.topic, text))
    return tuple(hint)


@dataclass(frozen=True)
class _LineCount:
    path: str  # as Spark read it
    size: int  # bytes, as Spark listed the file
    terminated: int  # lines ended by a newline
    tail: bool | None  # the text after the last newline: a whole JSON object (True), not (False), none (None)
    topics: tuple[str, ...] | None  # of FileRange
    value_schemas: tuple[tuple[str, str], ...]  # of FileRange, over the lines from the `start` it was counted for


def _line_counts(spark: SparkSession, storage: Storage, found: dict[str, int],
                 starts: dict[str, int]) -> list[_LineCount]:
    """Each file's lines; `starts`: per file (glob's spelling) the lines landed before, whose value schemas are
    not collected (a big file's are not collected at all then: its lines are not numbered here)."""
    whole, big = _by_size(found)
    counts = []

    def hinted(topic: Column, line: Column) -> Column:
        return F.struct(topic.alias("topic"), schema_written(line).alias("text"))

    if whole:
        last = F.element_at("parts", -1)
        lines = F.filter("parts", lambda part: F.trim(part) != "")
        start = F.create_map(*[part for path in whole for part in (F.lit(_normal(path)), F.lit(starts.get(path, 0)))])
        new = F.filter(F.slice("parts", F.coalesce(start[F.col("path")], F.lit(0)) + 1, 1 << 30),
                       lambda part, i: (i % HINT_EVERY == 0) & (F.trim(part) != ""))
        rows = _whole_files(spark, whole).select(
            "path", F.col("_metadata.file_size").alias("file_size"), (F.size("parts") - 1).alias("terminated"),
            F.when(last != "", _complete(last)).alias("tail"),
            _topics(F.array_distinct(F.transform(lines, topic_named))).alias("topics"),
            F.slice(F.filter(F.array_distinct(F.transform(new, lambda line: hinted(topic_named(line), line))),
                             lambda pair: pair["text"].isNotNull()), 1, HINTED_SCHEMAS).alias("schemas"),
        ).collect()  # one row per file
        counts += [_LineCount(row.path, row.file_size, row.terminated, row.tail, _tuple(row.topics),
                              _schemas_hint(row.schemas)) for row in rows]
    if big:
        # grouped by the path as Spark spells it, each file's spelling turned into the glob's once, not per line;
        # first by its value schemas too, to order them by where each first comes
        text = _text(spark, big).select(
            F.col("_metadata.file_path").alias("spelled"), F.col("_metadata.file_size").alias("file_size"),
            F.monotonically_increasing_id().alias("row"), "value",
        ).select("spelled", "file_size", "row", F.when(F.trim("value") != "", topic_named(F.col("value"))).alias("topic"),
                 F.when(F.col("row") % HINT_EVERY == 0, schema_written(F.col("value"))).alias("text"))
        by_schema = text.groupBy("spelled", "topic", "text").agg(
            F.count("*").alias("lines"), F.max("file_size").alias("file_size"), F.min("row").alias("first"))
        rows = by_schema.groupBy("spelled").agg(
            F.sum("lines").alias("lines"), F.max("file_size").alias("file_size"),
            _topics(F.collect_set("topic")).alias("topics"),
            F.slice(F.array_sort(F.collect_list(F.when(F.col("text").isNotNull(),
                                                       F.struct("first", "topic", "text")))), 1, HINTED_SCHEMAS)
            .alias("schemas"),
        ).select(_file_path(F.col("spelled")).alias("path"), "lines", "file_size", "topics", "schemas").collect()
        # Spark read up to the size it listed: the byte before it says whether that last line was finished
        unended = {row.path for row in rows
                   if storage.byte_at(_same_path(row.path, found), row.file_size - 1) != ord("\n")}
        tails = _last_lines_complete(spark, [_same_path(path, found) for path in unended]) if unended else {}
        counts += [_LineCount(row.path, row.file_size, row.lines - (row.path in unended), tails.get(row.path),
                              _tuple(row.topics),
                              () if starts.get(_same_path(row.path, found)) else _schemas_hint(row.schemas))
                   for row in rows]
    return counts


def _tuple(topics: list[str] | None) -> tuple[str, ...] | None:
    return None if topics is None else tuple(topics)


def _last_lines_complete(spark: SparkSession, paths: list[str]) -> dict[str, bool]:
    """Per big file whose text does not end with a newline: whether its last line is a whole JSON object (a line
    that kcat may still be writing). Read again, a file that has grown since has its later last line judged: a
    line followed by another is complete, so taking the earlier one is still right."""
    last = F.struct("block", "row")
    rows = _streamed(spark, paths).groupBy("path").agg(_complete(F.max_by("line", last)).alias("complete")).collect()
    return {row.path: bool(row.complete) for row in rows}


def unlanded_bytes(config: Config) -> int | None:
    """About how many bytes of event files the next `land` reads, found without a JVM, so that the command's JVM can
    be started for it: the local files the source's globs match, less what the lander's state says is landed of
    each. None when that needs a JVM (a Kafka source; event files or a warehouse not on the local disk). An
    estimate: Python's glob, not Hadoop's, matches the patterns."""
    source = config.source
    if source.kind != "files" or not all(LocalFiles.is_local(p) for p in (config.warehouse, *source.paths)):
        return None
    lander = DatabasePaths.of(config.warehouse, config.database).land_state
    _, state = VersionedState(LocalFiles(config.warehouse), lander).latest()
    landed = {LocalFiles.local_path(path).resolve(): entry.get("size", 0)
              for path, entry in (state or {}).get("files", {}).items()}
    found = {Path(path).resolve() for pattern in source.paths for path in glob.glob(str(LocalFiles.local_path(pattern)))}
    return sum(max(0, path.stat().st_size - landed.get(path, 0)) for path in found if path.is_file())


def plan(spark: SparkSession, storage: Storage, patterns: tuple[str, ...], landed: dict) -> list[FileRange]:
    """The new lines of every matching file: appended lines of known files, and new files.

    A last line without its newline is taken only when it is already a whole JSON object (kcat may
    still be writing it otherwise).
    """
    found: dict[str, int] = {}
    for pattern in patterns:
        for path, size in storage.list_files(pattern if "://" in pattern or pattern.startswith("file:") else f"file:{pattern}"):
            found[path] = size
    changed = {p: size for p, size in found.items() if size != landed.get(p, {}).get("size")}
    if not changed:
        return []
    ranges = []
    starts = {path: landed.get(path, {}).get("lines", 0) for path in changed}
    for count in _line_counts(spark, storage, changed, starts):
        path = _same_path(count.path, found)
        end = count.terminated + (1 if count.tail else 0)
        start = starts[path]
        whole = start == 0 and count.tail is not False and count.size == found[path]
        if end > start:
            ranges.append(FileRange(path, start, end, found[path], whole, count.topics, count.value_schemas))
    return sorted(ranges, key=lambda r: r.path)


def _same_path(path: str, found: dict[str, int]) -> str:
    """The glob's spelling of a path Spark read."""
    if path in found:
        return path
    return next(p for p in found if _normal(p) == _normal(path))


def unchanged_whole(storage: Storage, ranges: list[FileRange]) -> list[FileRange]:
    """The ranges of big files that hold their file whole, the file still the size it was planned at: their lines
    need no numbers to be picked."""
    return [r for r in ranges if r.whole and r.size > WHOLE_FILE_BYTES and storage.size(r.path) == r.size]


def require_still_planned(storage: Storage, unnumbered: list[FileRange]) -> None:
    """Once the lines of `unnumbered` are read: each file still the size it was planned at. Files only grow, so it was
    that size while Spark listed and read it. Grown, Spark may have read lines past the planned end (a split reads
    on to the end of the line that starts at its end, and its last split ends where the listing saw the file end):
    GREW_WHILE_READ, and the batch is read again with line numbers."""
    grown = [r.path for r in unnumbered if storage.size(r.path) != r.size]
    if grown:
        raise LakecompactError(f"{GREW_WHILE_READ}: {', '.join(grown)}")


def read(spark: SparkSession, ranges: list[FileRange], unnumbered: list[FileRange] | None = None) -> DataFrame:
    """The raw events of the planned lines: Kafka coordinates, key and payload texts, and where they came from.
    `unnumbered` (of `unchanged_whole`): ranges read whole without numbering their lines, one pass over the file
    instead of two; their `__origin` is null (for a batch kept without what the quarantine reads), and once they are
    read the caller checks `require_still_planned`."""
    unnumbered = unnumbered or []
    numbered = [r for r in ranges if r not in unnumbered]
    in_range = F.col("line_no").isNull()  # a line of an unnumbered range
    if numbered:
        # [start, end) per file as a literal map: a filter, no join and no Python worker
        bounds = F.create_map(*[
            part for r in numbered for part in (F.lit(_normal(r.path)), F.struct(F.lit(r.start).alias("start"),
                                                                                 F.lit(r.end).alias("end")))
        ])[F.col("path")]
        in_range |= (F.col("line_no") >= bounds["start"]) & (F.col("line_no") < bounds["end"])
    picked = _lines(spark, numbered, unnumbered).where(in_range & (F.trim("line") != ""))
    parsed = picked.withColumn("j", F.from_json("line", _KCAT_LINE))
    # read on, bytes that are not UTF-8 would become U+FFFD: data changed without a word. A line with a topic
    # parsed as an object (Spark keeps no partial result of a line that does not parse), so only the others
    # are parsed a second time to tell why they are no event.
    # kcat's own form names the parsed topic first: one comparison; other lines have their start read for a topic
    kcat_form = F.startswith("line", F.concat(F.lit('{"topic":"'), F.col("j.topic"), F.lit('",')))
    named = topic_named(F.col("line"))
    reason = (
        F.when(~F.col("utf8"), F.lit("line is not valid UTF-8 text"))
        .when(F.col("j.topic").isNotNull() & (kcat_form | (named == "") | (named == F.col("j.topic"))), F.lit(None))
        # planned by the topic its start names (FileRange.topics), the line must be of that topic
        .when(F.col("j.topic").isNotNull(), F.lit(TOPIC_NAMED_TWICE))
        .when(F.json_object_keys("line").isNull(), F.lit("line is not a JSON object (malformed or truncated)"))
        .otherwise(F.lit("line has no topic"))
    )
    # the text is kept only for lines that are no event (their quarantine needs it); `__line` reads the reason
    # from the first projection, so the reason's parse runs once per line, not again for the text
    return parsed.select(
        F.col("j.topic").alias("__kafka_topic"),
        F.col("j.partition").alias("__kafka_partition"),
        F.col("j.offset").alias("__kafka_offset"),
        F.col("j.key").alias("key"),
        F.col("j.payload").alias("payload"),
        F.concat("path", F.lit(":"), (F.col("line_no") + 1).cast("string")).alias("__origin"),
        reason.alias("__line_reason"),
        "line",
        F.lit(None).cast("binary").alias("__value_bytes"),
    ).select("*", F.when(F.col("__line_reason").isNotNull(), F.col("line")).alias("__line")).drop("line")
