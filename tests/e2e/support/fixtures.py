"""The saved fixtures (tests/fixtures/debezium): real events of an e2e run, and the rows the view must show
after landing them, for the fast test that needs no stack (tests/landing/test_real_debezium_fixtures.py)."""

from __future__ import annotations

import json

from tests.e2e.support.columns import Table, canonical, spark_type
from tests.e2e.support.common import say
from tests.e2e.support.messages import PLACEHOLDER, envelope, message_key, op_counts
from tests.e2e.support.sources import SourceDb
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "debezium"
SAVE_FIXTURES_ENV = "LAKECOMPACT_SAVE_DEBEZIUM_FIXTURES"  # =1: the PG/MariaDB tests (re)write tests/fixtures/debezium


def save_fixture(name: str, db: SourceDb, tables: list[Table], messages: list[dict], first_batch: list[dict],
                 keys_per_table: dict[str, int] | None = None) -> None:
    """A few hundred real events in kcat -J form, and the rows the view must show after landing them.

    All events of a sample of keys are kept (the full history of a key is independent of other keys), chosen
    to cover every op, TOAST placeholders, the added columns and the transaction; the keyless table is kept
    whole. The expected rows are the source's rows of those keys, read from the source database.
    """
    FIXTURES.mkdir(parents=True, exist_ok=True)
    first_ids = {(m["topic"], m["partition"], m["offset"]) for m in first_batch}
    chosen: list[dict] = []
    expected_tables = {}
    for table in tables:
        topic = db.topic(table.name)
        msgs = [m for m in messages if m["topic"] == topic]
        if table.key:
            by_key: dict[str, list[dict]] = {}
            for m in msgs:
                by_key.setdefault(json.dumps(message_key(m), sort_keys=True), []).append(m)
            # every event of accounts carries the ~4 KB schema and often ~10 KB of text: fewer of its keys
            limit = (keys_per_table or {"accounts": 14}).get(table.name, 30)
            keys = _cover(by_key, limit)
            msgs = [m for m in msgs if json.dumps(message_key(m), sort_keys=True) in keys]
            wanted_keys = {tuple(json.loads(k)[c] for c in table.key) for k in keys}
        else:
            wanted_keys = None
        chosen += msgs
        source = [{c.name: canonical(c, r.get(c.name)) for c in table.columns} for r in db.rows(table)]
        if wanted_keys is not None:
            source = [r for r in source if tuple(r[k] for k in table.key) in wanted_keys]
        expected_tables[db.lake_table(table.name)] = {
            "source_table": db.qualified(table.name),
            "key": list(table.key),
            "columns": [[c.name, c.kind] for c in table.columns],
            "types": {c.name: spark_type(c.kind, db.connector_type) for c in table.columns},
            "rows": sorted(source, key=lambda r: json.dumps([r[k] for k in table.key] or r, sort_keys=True, default=str)),
        }
    chosen.sort(key=lambda m: ((m["topic"], m["partition"], m["offset"]) not in first_ids, m["topic"], m["offset"]))
    first_lines = sum(1 for m in chosen if (m["topic"], m["partition"], m["offset"]) in first_ids)
    with open(FIXTURES / f"{name}.jsonl", "w") as f:
        for m in chosen:
            f.write(json.dumps({k: m[k] for k in ("topic", "partition", "offset", "key", "payload")}) + "\n")
    counts = op_counts(chosen)
    (FIXTURES / f"{name}.expected.json").write_text(json.dumps({
        "about": f"real Debezium {db.connector_type} events from tests/e2e (written with {SAVE_FIXTURES_ENV}=1): "
                 f"the view after landing {name}.jsonl (first_batch_lines, compact, the rest, compact)",
        "connector": db.connector_type,
        "first_batch_lines": first_lines,
        "events": dict(sorted(counts.items())),
        "tables": expected_tables,
    }, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    say(f"saved {len(chosen)} real events ({dict(counts)}) to {FIXTURES / (name + '.jsonl')}")


def _cover(by_key: dict[str, list[dict]], limit: int) -> set[str]:
    """Keys whose histories cover the most kinds of event, smallest first among equals."""
    def features(msgs: list[dict]) -> set[str]:
        found = set()
        ops = [envelope(m)["op"] if envelope(m) else "tombstone" for m in msgs]
        found |= set(ops)
        if "d" in ops and ops[-1] in ("c", "r", "u") and ops.index("d") < len(ops) - 1:
            found.add("re-insert")
        if ops and ops[-1] in ("d", "tombstone"):
            found.add("deleted at the end")
        if any(PLACEHOLDER in (m["payload"] or "") for m in msgs):
            found.add("toast")
        if sum(1 for o in ops if o == "u") >= 3:
            found.add("many updates")
        for m in msgs:
            env = envelope(m)
            if env and env.get("after"):
                found |= {f"column {k}" for k, v in env["after"].items() if v is not None}
        return found

    size = {k: sum(len(m["payload"] or "") for m in msgs) for k, msgs in by_key.items()}
    feats = {k: features(msgs) for k, msgs in by_key.items()}
    chosen: set[str] = set()
    covered: set[str] = set()
    while len(chosen) < limit:
        # the most new kinds of event per byte: a few histories of the large TOASTed text, many small ones
        best = max((k for k in by_key if k not in chosen),
                   key=lambda k: (len(feats[k] - covered) / size[k], -size[k]), default=None)
        if best is None:
            break
        if not feats[best] - covered:
            # everything covered: fill with small histories, of several events first
            rest = sorted((k for k in by_key if k not in chosen), key=lambda k: (len(by_key[k]) == 1, size[k]))
            chosen |= set(rest[: limit - len(chosen)])
            break
        chosen.add(best)
        covered |= feats[best]
    return chosen
