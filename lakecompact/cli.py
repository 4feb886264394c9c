"""The `lakecompact` command: `lakecompact --config FILE <command>`.

Every command is one row of COMMANDS: its name, what it does, its arguments, and its handler. A handler
gets the parsed arguments and a Context (the config and, on first use, the Spark session).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from lakecompact import __version__
from lakecompact import config as config_module
from lakecompact.errors import LakecompactError, as_missing_file
from lakecompact.report import say, seconds_since, warn
from lakecompact.views import DIALECTS

SQL_FORMATS = ("json", "table", "csv")  # `sql --format`
REPAIR_WAIT_SECONDS = 300  # `repair --wait`: an incremental snapshot of a few keys takes seconds


def _quiet_query_errors(args: argparse.Namespace) -> None:
    """PySpark logs a failed query's error with its JVM stack trace, as JSON on stderr, as it raises it; a command
    says it in one line (main). Unless --debug."""
    from pyspark.logger import PySparkLogger

    if not args.debug:
        for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
            # made as PySpark makes them: it logs to them with arguments of its own
            PySparkLogger.getLogger(name).disabled = True


class Context:
    """What a command runs with: the validated config, and a Spark session started only when asked for."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        # the session's JVM is a one-shot command's (lakecompact.spark.ONE_SHOT_JIT) unless the command knows,
        # before it starts, that its work is large enough for the full JIT to pay off
        self.one_shot = True

    @functools.cached_property
    def config(self) -> config_module.Config:
        if not self.args.config:
            raise LakecompactError(f"lakecompact {self.args.command}: expected --config FILE (a TOML file; see docs/configuration.md)")
        return config_module.load(self.args.config)

    @functools.cached_property
    def spark(self):
        from lakecompact.spark import create_session

        _quiet_query_errors(self.args)
        return create_session(self.config, wait=not self.args.no_wait, verbose=self.args.verbose,
                              one_shot=self.one_shot)

    def known_error(self, error: BaseException) -> LakecompactError | None:
        """The one-line error for a failure of Spark that says what is wrong (None: another failure): the s3a
        client missing from the class path or its endpoint gone, the shared metastore or the Kafka brokers gone, a
        file gone."""
        if "pyspark" in sys.modules and "config" in self.__dict__:  # else no Spark ran: none of Spark's failures
            from lakecompact.landing import kafka
            from lakecompact.spark import as_object_store_error
            from lakecompact.thrift_metastore import as_outage

            # the s3a client's first: a refused connection to the S3 endpoint is one of the metastore's signs too
            known = (as_object_store_error(error, self.config) or as_outage(error, self.config.metastore)
                     or kafka.as_outage(error, self.config.source))
            if known is not None:
                return known
        return as_missing_file(error, self.args.command)

    def files_only(self):
        """For commands that read the lake's files only: no session (no JVM) when the warehouse is local."""
        return None if config_module.is_local(self.config.warehouse) else self.spark


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable[[argparse.Namespace, Context], None]
    example: str
    arguments: Callable[[argparse.ArgumentParser], None] = lambda parser: None


def _tables(args: argparse.Namespace) -> list[str] | None:
    return [t.lower() for t in args.table] if args.table else None


def _require_tables(context: Context, tables: list[str] | None) -> None:
    """An unknown table named on the command line refused before a JVM starts, when the warehouse is local (its
    tables are read from the disk); elsewhere the command itself refuses it, once Spark is up."""
    if tables and config_module.is_local(context.config.warehouse):
        from lakecompact.lake.catalog import Catalog

        catalog = Catalog(None, context.config)
        for table in tables:
            catalog.require(table)


# -- the handlers -----------------------------------------------------------------------------------


def _land(args, context: Context) -> None:
    from lakecompact.landing.files import unlanded_bytes
    from lakecompact.landing.land import check_one_table_landing, dry_run, land
    from lakecompact.spark import FULL_JIT_EVENT_BYTES, one_shot_jit

    table = args.table.lower() if args.table else None
    if table:
        check_one_table_landing(context.config)  # before a JVM starts
    if args.dry_run:
        dry_run(context.spark, context.config, table)
    else:
        context.one_shot = one_shot_jit(unlanded_bytes(context.config), FULL_JIT_EVENT_BYTES)
        land(context.spark, context.config, table=table)


def _run(args, context: Context) -> None:
    from lakecompact.service.loop import run
    from lakecompact.spark import create_session

    _quiet_query_errors(args)
    spark = create_session(context.config, wait=not args.no_wait, verbose=args.verbose, scheduler_pools=True)
    run(spark, context.config, debug=args.debug)


def _requeue(args, context: Context) -> None:
    from lakecompact.landing.land import land

    land(context.spark, context.config, requeue=args.table.lower())


def _compact(args, context: Context) -> None:
    from lakecompact.compaction.compact import compact
    from lakecompact.spark import FULL_JIT_ROWS, one_shot_jit
    from lakecompact.views.status import unfolded_rows

    _require_tables(context, _tables(args))  # before a JVM starts
    context.one_shot = one_shot_jit(unfolded_rows(context.config, _tables(args)), FULL_JIT_ROWS)
    compact(context.spark, context.config, _tables(args), skip_busy=True)


def _rollback(args, context: Context) -> None:
    from lakecompact.compaction.rollback import rollback

    rollback(context.spark, context.config, args.table.lower(), args.to_version)


def _history(args, context: Context) -> None:
    from lakecompact.views.history import history, print_history

    table = args.table.lower()
    rows = history(context.files_only(), context.config, table)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print_history(f"{context.config.database}.{table}", rows)


def _sql(args, context: Context) -> None:
    from lakecompact.views.read import run_sql

    if args.as_of is not None:
        from lakecompact.views.as_of import moment_of

        moment_of(args.as_of)  # a moment that is none: one line before a JVM starts
    run_sql(context.spark, context.config, args.query, fmt=args.format, as_of=args.as_of)


def _status(args, context: Context) -> None:
    from lakecompact.views.status import print_status, status

    rows = status(context.files_only(), context.config)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print_status(rows)


def _report(args, context: Context) -> None:
    try:
        from lakecompact.views.html_report import write_report
    except ImportError as missing:
        raise LakecompactError(f"report: expected matplotlib for the charts ({missing}); "
                               "pip install 'lakecompact[report]'") from None
    write_report(context.files_only(), lambda: context.spark, context.config, args.out, _tables(args))


def _quarantine(args, context: Context) -> None:
    from lakecompact.views.quarantine import print_quarantine, quarantine

    table = args.table.lower() if args.table else None
    entries = quarantine(context.spark, context.config, table, args.show)
    if args.json:
        for entry in entries:
            print(json.dumps(entry))
    else:
        print_quarantine(entries, table)


def _changes(args, context: Context) -> None:
    from lakecompact.views.read import print_changes

    print_changes(context.spark, context.config, args.table.lower(), args.from_version, args.to_version,
                  args.format, args.output)


def _schema(args, context: Context) -> None:
    """DDL from a local .avsc needs neither Spark nor a metastore, and then a config is optional."""
    from lakecompact.schema.extract import check_avsc_arguments, run

    if args.avsc:  # the files and --table checked before a JVM starts
        check_avsc_arguments(args.avsc, args.key_avsc, args.table)
    offline = bool(args.dry_run and args.avsc)
    if offline and not args.config:
        config = config_module.from_dict({"warehouse": "/warehouse", "source": {"kind": "files", "paths": ["-"]}})
    else:
        config = context.config
    spark = None if offline else context.spark
    run(spark, config, avsc=args.avsc, key_avsc=args.key_avsc, table=args.table, topic=args.topic, dry_run=args.dry_run)


def _views(args, context: Context) -> None:
    from lakecompact.lake.catalog import Catalog
    from lakecompact.views.dialects import UnsupportedDialect, history_view_sql, view_sql

    database = context.config.database
    if args.dialect != "spark" and args.database in (None, database):
        warn(f"views --dialect {args.dialect}: the views are named {database}.<table>, as the Spark views; created "
             f"in the same metastore they replace those: --database NAME (say {database}_{args.dialect}) puts them "
             f"beside")
    catalog = Catalog(context.spark, context.config)
    tables = _tables(args) or catalog.tables()
    skipped, printed = [], 0
    for table in tables:
        schema = catalog.require(table)
        forms = [view_sql] + ([history_view_sql] if context.config.table(table).row_history else [])
        for form in forms:
            try:
                print(form(schema, database, args.dialect, args.database) + ";\n")
                printed += 1
            except UnsupportedDialect as exc:  # the other views are still printed
                warn(f"{exc}; skipped")
                skipped.append(exc)
    if skipped and not printed:
        raise skipped[0]


def _verify(args, context: Context) -> None:
    from lakecompact.verify.verify import require_source, verify

    require_source(context.config)  # before a JVM starts
    _require_tables(context, _tables(args))
    verify(context.spark, context.config, _tables(args))


def _repair(args, context: Context) -> None:
    from lakecompact.verify.repair import repair, require_signal_table
    from lakecompact.verify.verify import require_source

    require_signal_table(require_source(context.config))  # before a JVM starts
    _require_tables(context, _tables(args))
    repair(context.spark, context.config, _tables(args), wait=args.wait)


def _demo(args, context: Context) -> None:
    from lakecompact.demo import run_demo

    run_demo(args.warehouse)


def _class_archive(args, context: Context) -> None:
    import tempfile

    from lakecompact import class_archive
    from lakecompact.demo import run_demo

    def workload(options: tuple[str, ...]) -> str:
        run_demo(f"{scratch}/demo", archive_options=options)
        return class_archive.stop_jvm()

    with tempfile.TemporaryDirectory() as scratch:
        path = class_archive.build(workload)
    if path is not None:
        say(class_archive.for_spark_submit(path))


# -- the arguments ----------------------------------------------------------------------------------


def _one_table(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True, help="the table (as named in the metastore, without the database)")


def _some_tables(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", action="append", help="only this table (repeatable); default: every table")


def _land_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", help="only the events of this table's topics (Kafka source; the other topics "
                                        "keep their positions for a later land); default: every table")
    parser.add_argument("--dry-run", action="store_true",
                        help="say what would land, per topic and table (events, Kafka tombstones, new tables); "
                             "write nothing")


def _rollback_arguments(parser: argparse.ArgumentParser) -> None:
    _one_table(parser)
    parser.add_argument("--to-version", type=_non_negative, metavar="N",
                        help="go back to base version N, one version at a time (default: back one version)")


def _history_arguments(parser: argparse.ArgumentParser) -> None:
    _one_table(parser)
    parser.add_argument("--json", action="store_true", help="one JSON object per version")


def _sql_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="Spark SQL; the lake's database is the current one")
    parser.add_argument("--format", choices=SQL_FORMATS, default="json",
                        help="json (default): one JSON object per row, a null value printed as null; table: aligned "
                             "columns; csv: a header line, then the rows (an empty field is null, \"\" an empty string)")
    parser.add_argument("--as-of", metavar="MOMENT",
                        help="read every table of the query as the source held it at MOMENT (UTC, \"2026-06-30 "
                             "23:59:59\"), from its row history (row_history = true)")


def _status_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per table")


def _quarantine_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", help="only this table (_unknown: the events of no table); default: every table")
    parser.add_argument("--show", type=_non_negative, default=3, metavar="N",
                        help="sample events shown per reason (default 3)")
    parser.add_argument("--json", action="store_true", help="one JSON object per table and reason")


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="report.html", help="the HTML file to write (default report.html)")
    _some_tables(parser)


def _non_negative(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), got {text!r}")
    return int(text)


def _repair_arguments(parser: argparse.ArgumentParser) -> None:
    _some_tables(parser)
    parser.add_argument("--wait", type=_non_negative, default=REPAIR_WAIT_SECONDS, metavar="SECONDS",
                        help="with a Kafka source, watch the tables' topics up to SECONDS until each key came back "
                             f"(exit status 1 when some did not; default {REPAIR_WAIT_SECONDS}); 0: do not watch")


def _changes_arguments(parser: argparse.ArgumentParser) -> None:
    _one_table(parser)
    parser.add_argument("--from-version", type=int, default=1, help="first base version (default 1)")
    parser.add_argument("--to-version", type=int, help="last base version (default: the latest)")
    parser.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl", help="default jsonl, to stdout")
    parser.add_argument("--output", help="folder for --format parquet")


def _schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--avsc", help="a local Avro schema of the Debezium value (envelope or flattened)")
    parser.add_argument("--key-avsc", help="a local Avro schema of the message key")
    parser.add_argument("--table", help="with --avsc: the table it describes")
    parser.add_argument("--topic", help="only this topic")
    parser.add_argument("--dry-run", action="store_true", help="print the DDL, change nothing")


def _views_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dialect", default="trino", choices=DIALECTS, help="the engine's SQL (default trino)")
    parser.add_argument("--database", help="the database the views are created in (default: the lake's own; on a "
                                           "shared metastore another, so the Spark views stay)")
    _some_tables(parser)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse", help="where the demo lake goes (default: ./.demo/warehouse, emptied first)")


WITH_CONFIG = "lakecompact --config lake.toml"  # how the examples start
COMMANDS: tuple[Command, ...] = (
    Command("land", "land every available event as one increment batch per table, then exit", _land,
            f"{WITH_CONFIG} land --dry-run", _land_arguments),
    Command("run", "stay up: land every [run] interval_seconds and compact each table when its [run] trigger "
            "holds, in one Spark session; serves Prometheus metrics and writes a JSON status file; SIGTERM or "
            "Ctrl-C stops after the current step", _run, f"{WITH_CONFIG} run"),
    Command("requeue", "land a table's quarantined events again, once their cause is fixed (what fails again stays)",
            _requeue, f"{WITH_CONFIG} requeue --table public_customers", _one_table),
    Command("compact", "fold pending increments into a new base version", _compact,
            f"{WITH_CONFIG} compact --table public_customers", _some_tables),
    Command("rollback", "go back one base version (or to --to-version N); its increments become pending again",
            _rollback, f"{WITH_CONFIG} rollback --table public_customers --to-version 3", _rollback_arguments),
    Command("history", "every base version of a table: when, events in, rows written and live, buckets rewritten, "
            "time taken, change-feed version", _history, f"{WITH_CONFIG} history --table public_customers --json",
            _history_arguments),
    Command("sql", "run a query; rows are printed as JSON lines (nulls included), or as a table or CSV", _sql,
            f"{WITH_CONFIG} sql \"SELECT count(*) FROM lake.public_customers WHERE NOT __deleted\"", _sql_arguments),
    Command("status", "per table: base version, rows, pending batches and events, quarantine, change-feed versions, "
            "last compaction (files only: no JVM on a local warehouse)", _status, f"{WITH_CONFIG} status --json",
            _status_arguments),
    Command("quarantine", "per table, why events were quarantined (reasons, counts, sample events)", _quarantine,
            f"{WITH_CONFIG} quarantine --table public_customers --show 5", _quarantine_arguments),
    Command("report", "one self-contained HTML page: per table its state, compaction time and rows per version, "
            "pending events and source lag over time, quarantine reasons (Spark starts only to read quarantine "
            "reasons)", _report, f"{WITH_CONFIG} report --out /tmp/lake-report.html", _report_arguments),
    Command("changes", "the change feed of a table between two base versions", _changes,
            f"{WITH_CONFIG} changes --table public_customers --from-version 3 --to-version 5", _changes_arguments),
    Command("schema", "create or evolve tables from the registry's schemas (or print the DDL)", _schema,
            "lakecompact schema --avsc value.avsc --key-avsc key.avsc --table customers --dry-run", _schema_arguments),
    Command("views", "print each table's read view in another engine's SQL dialect", _views,
            f"{WITH_CONFIG} views --dialect trino --table public_customers", _views_arguments),
    Command("verify", "compare each table's view with its source table, read over JDBC: per bucket of keys, then key "
            "by key where a bucket differs, after the lake landed past the source's log position of the read (a key "
            "changed since is in flight, not a difference); prints what differs by kind and writes it to "
            "<table>_verify; exit status 1 when a table differs", _verify, f"{WITH_CONFIG} verify --table public_customers", _some_tables),
    Command("repair", "ask Debezium to send again the keys the latest verify found different (an incremental "
            "snapshot signalled in [verify] signal_table); prints the statement for keys the source no longer has; "
            "then watches the topics until each key came back (or its delete, for those statements): exit status 1 "
            "when some did not", _repair, f"{WITH_CONFIG} repair --table public_customers --wait 120",
            _repair_arguments),
    Command("demo", "land, compact and query the events shipped in examples/", _demo,
            "lakecompact demo --warehouse /tmp/demo", _demo_arguments),
    Command("class-archive", "build the JVM class archive that makes every command start seconds sooner "
            "(once per JDK and Spark; scripts/setup.sh runs it), and print the option that gives it to a "
            "spark-submit's driver", _class_archive, "lakecompact class-archive"),
)


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options of every command, taken before the command's name or after it (`lakecompact land --config F`).
    Only the main parser sets their defaults: a command's parser leaves out what it was not given, so it does not
    overwrite what was given before the command."""
    default = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument("--config", "-c", help="TOML config file (see docs/configuration.md)", **default)
    parser.add_argument("--verbose", action="store_true", help="show Spark's own log (errors only by default)",
                        **default)
    parser.add_argument("--debug", action="store_true", help="on an error, show the Python traceback too", **default)
    parser.add_argument("--no-wait", action="store_true",
                        help="embedded metastore in use by another lakecompact process: exit with status 3 "
                             "instead of waiting for it", **default)


class _Parser(argparse.ArgumentParser):
    """The parser of the command line and of each command's arguments (argparse makes the commands' of the same
    class)."""

    def error(self, message: str):
        """A mistake on the command line is one line, as every other mistake: not argparse's usage block first."""
        command = self.prog.partition(" ")[2]
        self.exit(2, f"lakecompact: error: {f'{command}: ' if command else ''}{message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lakecompact", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"lakecompact {__version__}")
    _global_options(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        sub = commands.add_parser(
            command.name, help=command.help, description=command.help, epilog=f"example:\n  {command.example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.arguments(sub)
        _global_options(sub, defaults=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    handler = next(c.run for c in COMMANDS if c.name == args.command)
    context = Context(args)
    try:
        try:
            handler(args, context)
        except Exception as exc:  # Spark's exceptions: only those that say what is wrong become one line
            known = context.known_error(exc)
            if known is None:
                raise
            raise known from exc
    except LakecompactError as exc:
        if args.debug:
            raise
        print(f"lakecompact: {'busy' if exc.exit_code == 0 else 'error'}: {exc}", file=sys.stderr)
        return exc.exit_code
    if getattr(args, "dry_run", False):  # land, schema
        print(f"lakecompact {args.command} --dry-run: finished in {seconds_since(started)}, nothing written",
              file=sys.stderr)
    else:
        print(f"lakecompact {args.command}: finished in {seconds_since(started)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
