"""The landing family: `landing` (kcat JSON with schemas), `landing-schemaless` (without), `landing-avro`
(Avro from the stack's Kafka, a schema registry) and `landing-topics` (the events over many topics), each
against the raw Spark reference measured the same way."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from datasets import VENV_PYTHON, dataset, generator_hash
from generate import TOPIC, avro_schema, key_schema, value_schema
from measure import ROOT, log

import stack

from .common import ENGINES_DIR, VIEW, land_snapshot, pick_engines, ratio_of

if TYPE_CHECKING:
    from run import Run



REFERENCE_STEP, REFERENCE_AGAIN = "parse with a known schema + write parquet", "the same again"


def _land_twice(run: Run, engines: list[str], ops: list[dict], cli: list[tuple[str, list[str], list[str]]],
                reference: dict, **reference_spec) -> tuple[list[str], list[str]]:
    """lakecompact in-process: `ops` (its lands and what they need first), then the same again in its process into
    another lake (a warm JVM, as the long-running `run` keeps); its CLI: the commands `cli`, each a process; raw
    Spark: the `reference` op, then the same again in its process. The in-process lands' steps, first and again."""
    warm = [{**op, "database": "lake_warm", "step": f"{op['step']} again"} for op in ops]
    if "lakecompact" in engines:
        run.engine("lakecompact", "lakecompact", [
            *ops, {"op": "check", "name": "landed [view over increments]"},
            *warm, {"op": "check", "name": "landed [view over increments, landed again]",
                    "relation": "lake_warm.public_customers"}])
    if "lakecompact-cli" in engines:
        run.cli("lakecompact-cli", cli)
    if "raw-spark" in engines:
        run.engine("raw-spark", "raw-spark", [{**reference, "step": REFERENCE_STEP}, {**reference, "step": REFERENCE_AGAIN},
                                              {"op": "check", "name": "landed"}], **reference_spec)
    lands = [op["step"] for op in ops if op["op"] == "land"]
    return lands, [f"{step} again" for step in lands]


def _landing_summary(run: Run, n: int, mb: float, rows: list[tuple[str, str, list[str], str, str | None]]) -> list[dict]:
    """(label, run, steps, note, reference step of raw-spark) per row: its seconds, events/s and MB/s, ratio to the
    reference step (None: no ratio)."""
    summary = []
    for label, run_name, steps, note, reference in rows:
        if run_name not in run.runs:  # an engine left out with --engines
            continue
        seconds = run.seconds(run_name, *steps)
        rate = f"; {n / seconds:,.0f} events/s, {mb / seconds:.0f} MB/s" if seconds and reference else ""
        summary.append({"step": "land the snapshot events", "engine": label, "seconds": seconds,
                        "ratio": ratio_of(seconds, run.seconds("raw-spark", reference)) if reference else None,
                        "note": f"{note}{rate}", "run": run_name, "steps": steps})
    return summary


def _landing_rows(lands: list[str], again: list[str], cli_lands: list[str], reference: str) -> list[tuple]:
    """The summary rows every landing scenario has: the reference, lakecompact in-process and CLI, and the second
    run of each in its process; `reference` says what the reference does."""
    return [
        (f"the peers' load step: {reference}", "raw-spark", [REFERENCE_STEP], "reference", REFERENCE_STEP),
        (f"lakecompact land (in-process, {len(lands)} runs)", "lakecompact", lands,
         "decodes envelopes, writes increments", REFERENCE_STEP),
        (f"lakecompact land (CLI, {len(cli_lands)} whole processes)", "lakecompact-cli", cli_lands, "incl. JVM starts",
         REFERENCE_STEP),
        ("the peers' load step, again in its process", "raw-spark", [REFERENCE_AGAIN], "reference of the row below",
         REFERENCE_AGAIN),
        ("lakecompact land again in its process, into another lake", "lakecompact", again,
         "a warm JVM, as `run` keeps (the table made again too); ratio to the reference's second run", REFERENCE_AGAIN),
    ]


def scenario_landing(run: Run) -> None:
    """The first land of a process (a one-shot command: the JVM compiles as it goes) and the same land again in that
    process into another lake (a warm JVM, as the long-running `run` keeps), each against the raw Spark reference
    measured the same way: first in its process, then again. `--engines lakecompact-cli,raw-spark` with
    `--driver-memory 2g` is the memory scenario: each whole process's peak memory is reported."""
    args = run.args
    n = args.rows or 1_000_000
    engines = pick_engines(args, ("lakecompact", "lakecompact-cli", "raw-spark", "duckdb"))
    snap = dataset(f"snapshot-{n}", "snapshot", n, args)
    run.params = {"events": n, "bytes": snap["bytes"], "files": snap["files"], "cores": args.cores,
                  "driver_memory": args.driver_memory}
    ops, _ = land_snapshot(snap, args, "land")
    lands, again = _land_twice(run, engines, ops, [(op["step"], ["land"], op["paths"]) for op in ops],
                               {"op": "events-to-parquet", "paths": [snap["glob"]]})
    if "duckdb" in engines:
        run.engine("duckdb", "duckdb", [{"op": "load", "paths": [snap["glob"]], "step": "parse + write parquet"},
                                        {"op": "check", "name": "landed"}])
    mb = snap["bytes"] / 1e6
    rows = _landing_rows(lands, again, lands, "envelope parsed with a known schema, parquet written")
    rows.insert(3, ("duckdb read_json + json_transform + parquet", "duckdb", ["parse + write parquet"], "no Spark",
                    REFERENCE_STEP))
    run.write(f"landing: {n:,} snapshot events ({mb:,.0f} MB of kcat JSON)", _landing_summary(run, n, mb, rows),
              run.correctness("duckdb"), "the peers' load step (the first in its process)")


def scenario_landing_schemaless(run: Run) -> None:
    """`landing` for Kafka Connect JSON without the embedded schema (JsonConverter schemas.enable=false): the table's
    schema is given ahead (`lakecompact schema --avsc … --key-avsc …`, docs/schemas-and-hooks.md "Topics without a
    schema"), a step of the run timed apart from `land`; the reference parses the same payloads with a known
    schema."""
    args = run.args
    n = args.rows or 1_000_000
    engines = pick_engines(args, ("lakecompact", "lakecompact-cli", "raw-spark"))
    snap = dataset(f"snapshot-{n}-no-schema", "snapshot", n, args, format="json-no-schema")
    run.params = {"events": n, "bytes": snap["bytes"], "files": snap["files"], "cores": args.cores,
                  "driver_memory": args.driver_memory}
    run.work.mkdir(parents=True, exist_ok=True)
    avsc = {}
    for name, schema in (("value", value_schema()), ("key", key_schema())):
        avsc[name] = run.work / f"customers-{name}.avsc"
        avsc[name].write_text(json.dumps(avro_schema(schema), indent=1))
    table = VIEW.split(".", 1)[1]
    given = {"op": "schema", "avsc": str(avsc["value"]), "key_avsc": str(avsc["key"]), "table": table,
             "topic": TOPIC, "step": "schema (given ahead)"}
    ops, _ = land_snapshot(snap, args, "land")
    cli = [(given["step"], ["schema", "--avsc", given["avsc"], "--key-avsc", given["key_avsc"], "--table", table,
                            "--topic", TOPIC], [snap["glob"]]),
           *[(op["step"], ["land"], op["paths"]) for op in ops]]
    lands, again = _land_twice(run, engines, [given, *ops], cli, {"op": "events-to-parquet", "paths": [snap["glob"]]})
    if "duckdb" in engines:
        run.engine("duckdb", "duckdb", [{"op": "load", "paths": [snap["glob"]], "step": "parse + write parquet"},
                                        {"op": "check", "name": "landed"}])
    mb = snap["bytes"] / 1e6
    rows = _landing_rows(lands, again, lands, "payload parsed with a known schema, parquet written")
    rows += [("lakecompact schema --avsc (in-process, before the land)", "lakecompact", [given["step"]],
              "the table made from the .avsc; not in the ratio", None),
             ("lakecompact schema --avsc (CLI, whole process)", "lakecompact-cli", [given["step"]], "not in the ratio",
              None),
             ("duckdb read_json + json_transform + parquet", "duckdb", ["parse + write parquet"], "no Spark",
              REFERENCE_STEP)]
    run.write(f"landing-schemaless: {n:,} snapshot events without embedded schemas ({mb:,.0f} MB of kcat JSON)",
              _landing_summary(run, n, mb, rows), run.correctness("duckdb" if "duckdb" in engines else "raw-spark"),
              "the peers' load step (the first in its process)")


def scenario_landing_topics(run: Run) -> None:
    """Many tables: the `landing` scenario's events spread over --topics topics (tables), each in files of its own as
    `kcat -t` per topic writes them, each table's events in --schema-versions schema versions one after the other
    (each adds a column), landed in one batch, against the same events of one topic (its events in as many versions);
    each land the first in its process, then again in it into another lake. Then `compact` of every table of the
    many-table lake, whole and per table."""
    args = run.args
    n, k, v = args.rows or 1_000_000, args.topics, args.schema_versions
    versions = {"schema_versions": v} if v > 1 else {}
    suffix = f"-versions-{v}" if v > 1 else ""
    one = dataset(f"snapshot-{n}{suffix}", "snapshot", n, args, **versions)
    many = dataset(f"snapshot-{n}-topics-{k}{suffix}", "snapshot", n, args, topics=k, **versions)
    run.params = {"events": n, "topics": k, "schema_versions": v, "bytes": many["bytes"], "files": many["files"],
                  "cores": args.cores, "driver_memory": args.driver_memory}
    views = [f"lake.public_customers_{i:03d}" for i in range(k)]
    for run_name, snap, relation in (("one-table", one, VIEW), ("tables", many, views)):
        ops = [{"op": "land", "paths": [snap["glob"]], "step": "land"},
               {"op": "check", "name": "landed", "relation": relation},
               {"op": "land", "paths": [snap["glob"]], "step": "land again", "database": "lake_warm"}]
        if run_name == "tables":
            ops += [{"op": "compact", "step": "compact every table"},
                    {"op": "check", "name": "landed [compacted]", "relation": relation}]
        run.engine(run_name, "lakecompact", ops)
    whole = run.seconds("tables", "compact every table")
    mb = many["bytes"] / 1e6
    summary = []
    for label, step, note in ((f"one table: land {n:,} events", "land", "reference"),
                              ("again in its process, into another lake", "land again", "reference of the row below")):
        reference = run.seconds("one-table", step)
        summary += [
            {"step": "land", "engine": label, "seconds": reference, "ratio": 1.0 if reference else None,
             "note": note, "run": "one-table", "steps": [step]},
            {"step": "land", "engine": f"{k} tables: the same events, {k} topics", "seconds": run.seconds("tables", step),
             "ratio": ratio_of(run.seconds("tables", step), reference), "note": f"{many['files']} files", "run": "tables",
             "steps": [step]},
        ]
    summary.append({"step": "compact", "engine": f"compact of the {k} tables (one command)", "seconds": whole,
                    "ratio": None, "note": f"{whole / k:.2f} s per table" if whole else "", "run": "tables",
                    "steps": ["compact every table"]})
    run.write(f"landing-topics: {n:,} snapshot events over {k} topics, {v} schema version(s) each "
              f"({mb:,.0f} MB of kcat JSON)", summary,
              run.correctness("one-table"), "one table's land of the same events (the first in its process)")


@contextmanager
def kafka_with_registry(topic: str) -> Iterator[tuple[object, dict]]:
    """The stack's Kafka (started when it is not running, and then stopped at the end) and the tests' schema registry
    with the events' schemas for `topic` (benchmarks/engines/registry.py, ended at the end): (stack, registry)."""
    started = stack.component("kafka").pid() is None
    if started:
        log(f"starting the stack's Kafka ({stack.KAFKA_BOOTSTRAP})")
        stack.up(components=["kafka"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    server = subprocess.Popen([str(VENV_PYTHON), str(ENGINES_DIR / "registry.py"), topic], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=str(ROOT), env=env)
    try:
        registry = json.loads(server.stdout.readline() or "{}")
        if not registry:
            raise SystemExit("the schema registry did not start (benchmarks/engines/registry.py)")
        yield stack, registry
    finally:
        server.stdin.close()
        server.wait(timeout=30)
        if started:
            log("stopping the stack's Kafka this run started")
            stack.down(components=["kafka"])


def scenario_landing_avro(run: Run) -> None:
    """`landing` for Avro in Confluent's wire format, from a Kafka topic, the writer schema in a schema registry
    (the tests' server, started here): lakecompact with `kind = "kafka"` and `[registry]`; the reference reads the
    same topic with Spark's Kafka source and decodes it with from_avro and the schema known in advance. Producing the
    topic (benchmarks/generate.py --format avro) is setup, not timed; a topic that holds the events is kept."""
    args = run.args
    n = args.rows or 1_000_000
    engines = pick_engines(args, ("lakecompact", "lakecompact-cli", "raw-spark"))
    # a table public_customers, as the other scenarios'
    topic = f"bench{n}{generator_hash()}.public.customers"
    with kafka_with_registry(topic) as (stack, registry):
        jars = [*stack.spark_kafka_jars(), *stack.spark_avro_jars()]
        data = dataset(f"avro-{n}", "snapshot", n, args, fresh=True, format="avro", kafka=stack.KAFKA_BOOTSTRAP,
                       topic=topic, value_schema_id=registry["value"], key_schema_id=registry["key"],
                       jars=",".join(jars))
        run.params = {"events": n, "bytes": data["bytes"], "topic_partitions": data["args"]["partitions"],
                      "cores": args.cores, "driver_memory": args.driver_memory}
        run.lake_sections = {"source": {"kind": "kafka", "bootstrap_servers": stack.KAFKA_BOOTSTRAP,
                                        "topics": [topic], "starting_offsets": "earliest"},
                             "registry": {"url": registry["url"]}}
        lands, again = _land_twice(
            run, engines, [{"op": "land", "step": "land"}], [("land", ["land"], [])],
            {"op": "avro-to-parquet", "kafka": stack.KAFKA_BOOTSTRAP, "topic": topic,
             "avro_schema": json.dumps(avro_schema(value_schema()))}, spark_jars=jars)
    mb = data["bytes"] / 1e6
    rows = _landing_rows(lands, again, ["land"], "Kafka source, 5-byte header cut, from_avro with a known schema, "
                                                 "parquet written")
    run.write(f"landing-avro: {n:,} snapshot events as Avro in Confluent's wire format from Kafka ({mb:,.0f} MB of "
              "values)", _landing_summary(run, n, mb, rows), run.correctness("raw-spark"),
              "the peers' load step (the first in its process)")
