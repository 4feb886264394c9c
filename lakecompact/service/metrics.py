"""What `lakecompact run` shows operators: Prometheus text exposition (format 0.0.4) of a status snapshot,
served on a loopback HTTP port, and the same snapshot as JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lakecompact.errors import LakecompactError
from lakecompact.report import plain
from lakecompact.service.policy import epoch_seconds

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# name, type, help, and the value of one table's row of the snapshot (None: not shown)
TABLE_METRICS: tuple[tuple[str, str, str, Callable[[dict, float], float | None]], ...] = (
    ("base_version", "gauge", "Current base version (0: never compacted).", lambda t, now: t.get("base_version")),
    ("base_rows", "gauge", "Rows of the current base version, deleted rows included.", lambda t, now: t.get("base_rows")),
    ("live_rows", "gauge", "Rows of the current base version that are not deleted.", lambda t, now: t.get("live_rows")),
    ("pending_batches", "gauge", "Landed batches not yet compacted.", lambda t, now: t.get("pending_batches")),
    ("pending_events", "gauge", "Landed events not yet compacted.", lambda t, now: t.get("pending_events")),
    ("oldest_pending_age_seconds", "gauge", "Age of the oldest pending batch.",
     lambda t, now: _age(t.get("oldest_pending_landed_at"), now)),
    ("source_lag_seconds", "gauge", "Now minus the last source change landed (base or pending).",
     lambda t, now: _age(t.get("last_source_ts"), now)),
    ("quarantined_events", "gauge", "Events set aside in the table's quarantine.", lambda t, now: t.get("quarantined")),
    ("last_compaction_timestamp_seconds", "gauge", "When the current base version was written.",
     lambda t, now: epoch_seconds(t.get("last_compaction"))),
    ("last_compaction_duration_seconds", "gauge", "How long the last compaction took.",
     lambda t, now: t.get("last_compaction_seconds")),
    ("last_compaction_rows_written", "gauge", "Rows the last compaction wrote.",
     lambda t, now: t.get("last_compaction_rows_written")),
    ("compacting", "gauge", "1 while the table is being compacted.", lambda t, now: int(bool(t.get("compacting")))),
    ("compactions_total", "counter", "Compactions done by this process.", lambda t, now: t.get("compactions", 0)),
    ("compaction_failures_total", "counter", "Compactions that failed in this process.",
     lambda t, now: t.get("compaction_failures", 0)),
    ("verify_divergent_keys", "gauge", ("Keys (rows, keyless) the latest `lakecompact verify` found different from "
     "the source table."), lambda t, now: t.get("verify_divergent")),
    ("last_verify_timestamp_seconds", "gauge", "When the latest `lakecompact verify` of the table ran.",
     lambda t, now: epoch_seconds(t.get("verified_at"))),
)
# name, type, help, and the value from the snapshot's "land" part
LAND_METRICS: tuple[tuple[str, str, str, Callable[[dict, float], float | None]], ...] = (
    ("lands_total", "counter", "Land steps done by this process.", lambda l, now: l.get("lands", 0)),
    ("land_failures_total", "counter", "Land steps that failed in this process.", lambda l, now: l.get("failures", 0)),
    ("land_events_total", "counter", "Events read by land steps of this process.", lambda l, now: l.get("events_in", 0)),
    ("land_rows_total", "counter", "Rows written to increments by this process.", lambda l, now: l.get("rows_out", 0)),
    ("land_quarantined_total", "counter", "Events quarantined by this process.", lambda l, now: l.get("quarantined", 0)),
    ("land_skipped_total", "counter", "Events skipped by this process (no row of a table: tombstones, heartbeats).",
     lambda l, now: l.get("skipped", 0)),
    ("land_held_total", "counter", "Truncates held by this process: of tables not made yet, their key unknown.",
     lambda l, now: l.get("held", 0)),
    ("land_held_landed_total", "counter", "Held truncates this process landed with the batch that made their table.",
     lambda l, now: l.get("held_landed", 0)),
    ("last_land_timestamp_seconds", "gauge", "When the last land step ended.", lambda l, now: epoch_seconds(l.get("last_at"))),
    ("last_land_duration_seconds", "gauge", "How long the last land step took.", lambda l, now: l.get("last_seconds")),
)


def exposition(snapshot: dict[str, Any], now: float) -> str:
    """The snapshot ({started_at, land: {...}, tables: [status rows + compacting, compactions, ...]}) as
    Prometheus text: one family per metric, one sample per table labelled table="<db>.<table>"."""
    lines = []

    def family(name: str, kind: str, text: str, samples: list[tuple[str, float | None]]) -> None:
        lines.extend([f"# HELP lakecompact_{name} {text}", f"# TYPE lakecompact_{name} {kind}"])
        lines.extend(f"lakecompact_{name}{labels} {plain(value)}" for labels, value in samples if value is not None)

    family("up", "gauge", "1 while `lakecompact run` serves.", [("", 1)])
    family("start_timestamp_seconds", "gauge", "When this process started.", [("", epoch_seconds(snapshot["started_at"]))])
    for name, kind, text, value in LAND_METRICS:
        family(name, kind, text, [("", value(snapshot["land"], now))])
    tables = [row for row in snapshot["tables"] if "base_version" in row]
    for name, kind, text, value in TABLE_METRICS:
        family(name, kind, text, [(f'{{table="{_label(row["table"])}"}}', value(row, now)) for row in tables])
    return "\n".join(lines) + "\n"


def serve(host: str, port: int, snapshot: Callable[[], dict[str, Any]], now: Callable[[], float]) -> ThreadingHTTPServer:
    """Serve GET /metrics (Prometheus text) and /status (JSON) of the latest snapshot, in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            if self.path == "/metrics":
                self._send(200, PROMETHEUS_CONTENT_TYPE, exposition(snapshot(), now()))
            elif self.path == "/status":
                self._send(200, "application/json", json.dumps(snapshot(), indent=1))
            else:
                self._send(404, "text/plain; charset=utf-8", "lakecompact run serves /metrics and /status\n")

        def _send(self, code: int, content_type: str, body: str) -> None:
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # scrapes are not worth a line each
            pass

    try:
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise LakecompactError(
            f"run.metrics_port: cannot listen on {host}:{port} ({exc.strerror}); expected a free port, or 0 for none"
        ) from None
    threading.Thread(target=server.serve_forever, name="lakecompact-metrics", daemon=True).start()
    return server


def _age(iso: str | None, now: float) -> float | None:
    seen = epoch_seconds(iso)
    return None if seen is None else max(0.0, now - seen)


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
