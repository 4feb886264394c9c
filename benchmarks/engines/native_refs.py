"""References without Spark (run with .bench/venv41/bin/python):

  duckdb    parses the kcat files (read_json + json_transform of the envelope) into parquet; the change is applied
            as a full rewrite: the latest row per key of base ∪ change (arg_max by LSN), deletes dropped,
            written as a new parquet base.
  delta-rs  the `deltalake` package: the events parsed by DuckDB into Arrow (a step of its own), written with
            write_deltalake; the change (latest event per key by LSN, parsed the same way) applied with
            DeltaTable.merge (delete when matched and op = 'd', update when matched, insert when not matched).
ops: as in peers.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import DUCKDB_CHECK, READ_QUERY, run_main

_IMAGE = '{"id": "BIGINT", "name": "VARCHAR", "score": "INTEGER", "bio": "VARCHAR"}'
_ENVELOPE = f'"before": {_IMAGE}, "after": {_IMAGE}, "source": {{"lsn": "BIGINT"}}, "op": "VARCHAR"'
_STRUCTURE = f'{{"payload": {{{_ENVELOPE}}}, {_ENVELOPE}}}'
_KCAT_COLUMNS = ("{'topic': 'VARCHAR', 'partition': 'INTEGER', 'offset': 'BIGINT', 'key': 'VARCHAR', "
                 "'payload': 'VARCHAR'}")


def parsed_sql(paths: list[str]) -> str:
    files = "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"
    env = lambda name: f"coalesce(m.payload.{name}, m.{name})"
    image = f"(CASE WHEN {env('op')} = 'd' THEN {env('before')} ELSE {env('after')} END)"
    return (
        f"SELECT {image}.id AS id, {env('op')} AS op, {image}.name AS name, {image}.score AS score, "
        f"{image}.bio AS bio, {env('source')}.lsn AS lsn "
        f"FROM (SELECT json_transform(payload, '{_STRUCTURE}') AS m "
        f"FROM read_json({files}, format = 'newline_delimited', columns = {_KCAT_COLUMNS}) WHERE payload IS NOT NULL)"
    )


def latest_sql(events: str) -> str:
    return (
        "SELECT id, e.op AS op, e.name AS name, e.score AS score, e.bio AS bio, e.lsn AS lsn FROM ("
        "SELECT id, arg_max({'op': op, 'name': name, 'score': score, 'bio': bio, 'lsn': lsn}, lsn) AS e "
        f"FROM ({events}) GROUP BY id)"
    )


def connect(spec: dict, work: Path):
    import duckdb

    db = duckdb.connect()
    db.execute(f"SET threads = {spec.get('threads', 2)}")
    db.execute(f"SET temp_directory = '{work / 'duckdb_tmp'}'")
    db.execute(f"SET memory_limit = '{spec.get('duckdb_memory', '8GB')}'")
    return db


def check(rec, db, name: str, relation: str) -> None:
    row = db.execute(f"SELECT {DUCKDB_CHECK} FROM {relation}").fetchall()[0]
    rec.check(name, *row)


def read(rec, db, op: dict, relation: str) -> None:
    for i in range(op.get("repeat", 1)):
        with rec.step(op["step"] if op.get("repeat", 1) == 1 else f"{op['step']} #{i + 1}") as info:
            rows, score_sum = db.execute(f"SELECT {READ_QUERY} FROM {relation}").fetchall()[0]
            info["rows"], info["score_sum"] = int(rows), int(score_sum or 0)


def duckdb_body(spec: dict, rec) -> None:
    import duckdb

    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    db = connect(spec, work)
    rec.result["info"]["duckdb"] = duckdb.__version__
    version = 0
    current = None
    for op in spec["ops"]:
        kind = op["op"]
        if kind == "load":
            version += 1
            current = work / f"base-v{version}.parquet"
            with rec.step(op["step"]):
                db.execute(f"COPY (SELECT id, name, score, bio, lsn FROM ({parsed_sql(op['paths'])})) "
                           f"TO '{current}' (FORMAT PARQUET)")
        elif kind == "merge":
            change = work / f"change-v{version + 1}.parquet"
            with rec.step(op["step"] + ": parse change"):
                db.execute(f"COPY ({parsed_sql(op['paths'])}) TO '{change}' (FORMAT PARQUET)")
            target = work / f"base-v{version + 1}.parquet"
            with rec.step(op["step"] + ": rewrite base"):
                events = (f"SELECT id, 'r' AS op, name, score, bio, lsn FROM read_parquet('{current}') UNION ALL "
                          f"SELECT id, op, name, score, bio, lsn FROM read_parquet('{change}')")
                db.execute(f"COPY (SELECT id, name, score, bio, lsn FROM ({latest_sql(events)}) WHERE op <> 'd') "
                           f"TO '{target}' (FORMAT PARQUET)")
            version, current = version + 1, target
        elif kind == "read":
            read(rec, db, op, f"read_parquet('{current}')")
        elif kind == "check":
            check(rec, db, op["name"], f"read_parquet('{current}')")
        else:
            raise ValueError(f"unknown op {kind}")


def deltars_body(spec: dict, rec) -> None:
    import deltalake
    from deltalake import DeltaTable, write_deltalake

    work = Path(spec["work"])
    work.mkdir(parents=True, exist_ok=True)
    path = str(work / "delta-rs" / "customers")
    db = connect(spec, work)
    rec.result["info"]["deltalake"] = deltalake.__version__
    for op in spec["ops"]:
        kind = op["op"]
        if kind == "load":
            with rec.step(op["step"] + ": parse (duckdb)"):
                rows = db.execute(f"SELECT id, name, score, bio, lsn FROM ({parsed_sql(op['paths'])})").to_arrow_table()
            with rec.step(op["step"] + ": write (delta-rs)"):
                write_deltalake(path, rows, mode="overwrite")
            del rows
        elif kind == "merge":
            with rec.step(op["step"] + ": parse (duckdb)"):
                changes = db.execute(latest_sql(parsed_sql(op["paths"]))).to_arrow_table()
            with rec.step(op["step"] + ": merge (delta-rs)") as info:
                metrics = (
                    DeltaTable(path)
                    .merge(source=changes, predicate="t.id = s.id", source_alias="s", target_alias="t")
                    .when_matched_delete(predicate="s.op = 'd'")
                    .when_matched_update(updates={c: f"s.{c}" for c in ("name", "score", "bio", "lsn")})
                    .when_not_matched_insert(updates={c: f"s.{c}" for c in ("id", "name", "score", "bio", "lsn")},
                                             predicate="s.op <> 'd'")
                    .execute()
                )
            info["metrics"] = {k: v for k, v in (metrics or {}).items() if isinstance(v, (int, float, str))}
        elif kind in ("read", "check"):
            db.register("dataset", DeltaTable(path).to_pyarrow_dataset())
            if kind == "read":
                read(rec, db, op, "dataset")
            else:
                check(rec, db, op["name"], "dataset")
        else:
            raise ValueError(f"unknown op {kind}")


if __name__ == "__main__":
    import json

    engine = json.loads(Path(sys.argv[1]).read_text())["engine"]
    run_main(engine, duckdb_body if engine == "duckdb" else deltars_body)
