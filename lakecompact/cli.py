"""The `lakecompact` command: `lakecompact --config FILE <command>`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from lakecompact import config as config_module
from lakecompact.errors import LakecompactError
from lakecompact.report import seconds_since


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakecompact", description=__doc__)
    parser.add_argument("--config", "-c", help="TOML config file (see README: Configuration)")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("land", help="land every available event as one increment batch per table, then exit")
    requeue = commands.add_parser(
        "requeue", help="land a table's quarantined events again, once their cause is fixed (what fails again stays)"
    )
    requeue.add_argument("--table", required=True)
    compact = commands.add_parser("compact", help="fold pending increments into a new base version")
    compact.add_argument("--table", action="append", help="only this table (repeatable); default: every table")
    rollback = commands.add_parser("rollback", help="go back one base version; its increments become pending again")
    rollback.add_argument("--table", required=True)
    sql = commands.add_parser("sql", help="run a query; rows are printed as JSON lines")
    sql.add_argument("query")
    status = commands.add_parser("status", help="per table: base version, rows, pending batches, quarantine")
    status.add_argument("--json", action="store_true", help="one JSON object per table")
    changes = commands.add_parser("changes", help="the change feed of a table between two base versions")
    changes.add_argument("--table", required=True)
    changes.add_argument("--from-version", type=int, default=1)
    changes.add_argument("--to-version", type=int)
    changes.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    changes.add_argument("--output", help="folder for --format parquet")
    schema = commands.add_parser("schema", help="create or evolve tables from the registry's schemas (or print the DDL)")
    schema.add_argument("--avsc", help="a local Avro schema of the Debezium value (envelope or flattened)")
    schema.add_argument("--key-avsc", help="a local Avro schema of the message key")
    schema.add_argument("--table", help="with --avsc: the table it describes")
    schema.add_argument("--topic", help="only this topic")
    schema.add_argument("--dry-run", action="store_true", help="print the DDL, change nothing")
    views = commands.add_parser("views", help="print each table's read view in another engine's SQL dialect")
    views.add_argument("--dialect", default="trino", help="trino, presto, athena, hive or spark")
    views.add_argument("--table", action="append", help="only this table (repeatable)")
    demo = commands.add_parser("demo", help="land, compact and query the events shipped in examples/")
    demo.add_argument("--warehouse", help="where the demo lake goes (default: ./.demo/warehouse, emptied first)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.monotonic()
    try:
        if args.command == "demo":
            from lakecompact.demo import run_demo

            run_demo(args.warehouse)
            return 0
        if args.command == "schema" and args.dry_run and args.avsc:
            _schema_dry_run(args)
            return 0
        if not args.config:
            raise LakecompactError(f"lakecompact {args.command}: expected --config FILE (a TOML file; see README)")
        config = config_module.load(args.config)
        from lakecompact.spark import create_session

        spark = create_session(config)
        _run(args, config, spark)
    except LakecompactError as exc:
        print(f"lakecompact: error: {exc}", file=sys.stderr)
        return 2
    print(f"lakecompact {args.command}: finished in {seconds_since(started)}", file=sys.stderr)
    return 0


def _run(args, config, spark) -> None:
    if args.command == "land":
        from lakecompact.landing.land import land

        land(spark, config)
    elif args.command == "requeue":
        from lakecompact.landing.land import land

        land(spark, config, requeue=args.table.lower())
    elif args.command == "compact":
        from lakecompact.compaction.compact import compact

        compact(spark, config, [t.lower() for t in args.table] if args.table else None)
    elif args.command == "rollback":
        from lakecompact.compaction.compact import rollback

        rollback(spark, config, args.table.lower())
    elif args.command == "sql":
        from lakecompact.views.read import run_sql

        run_sql(spark, config, args.query)
    elif args.command == "changes":
        from lakecompact.views.read import print_changes

        print_changes(spark, config, args.table.lower(), args.from_version, args.to_version, args.format, args.output)
    elif args.command == "schema":
        from lakecompact.schema.extract import run

        run(spark, config, avsc=args.avsc, key_avsc=args.key_avsc, table=args.table, topic=args.topic, dry_run=args.dry_run)
    elif args.command == "views":
        from lakecompact.catalog import Catalog
        from lakecompact.views.dialects import view_sql

        catalog = Catalog(spark, config)
        for table in [t.lower() for t in args.table] if args.table else catalog.tables():
            print(view_sql(catalog.require(table), config.database, args.dialect) + ";\n")
    elif args.command == "status":
        from lakecompact.views.read import print_status, status

        rows = status(spark, config)
        if args.json:
            for row in rows:
                print(json.dumps(row))
        else:
            print_status(rows)


def _schema_dry_run(args) -> None:
    """DDL from a local .avsc needs neither Spark nor a metastore; a config is optional."""
    from lakecompact.schema.extract import run

    config = (
        config_module.load(args.config)
        if args.config
        else config_module.from_dict({"warehouse": "/warehouse", "source": {"kind": "files", "paths": ["-"]}})
    )
    run(None, config, avsc=args.avsc, key_avsc=args.key_avsc, table=args.table, topic=args.topic, dry_run=True)


if __name__ == "__main__":
    sys.exit(main())
