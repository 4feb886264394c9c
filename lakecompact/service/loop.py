"""`lakecompact run`: land every interval and compact tables by the `[run]` policy, in one Spark session.

Landing runs in the main thread; compactions run beside it in a small thread pool, each table in its own
Spark scheduler pool, so a land step never waits for a compaction. Each step is the same as the command of
that name (its locks, its commit protocol), so a crash of `run` is recovered by the next start exactly as a
crashed `land` or `compact` is. SIGTERM or SIGINT: the steps under way finish, then `run` exits 0.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from lakecompact.compaction.compact import compact
from lakecompact.config import RUN_TRIGGERS, Config
from lakecompact.errors import LakecompactError, LockHeld, as_missing_file
from lakecompact.lake.catalog import Catalog
from lakecompact.lake.paths import DatabasePaths
from lakecompact.lake.storage import LocalFiles, lock_holder
from lakecompact.landing.land import land
from lakecompact.report import plain, say, seconds_since, warn
from lakecompact.service import metrics
from lakecompact.service.policy import compaction_due
from lakecompact.views.status import status, table_of

# land steps failing in a row before `run` gives up (exit non-zero: a supervisor restarts it, and the
# restart recovers), rather than retrying forever against a broken session
MAX_LAND_FAILURES_IN_A_ROW = 5


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _first_line(exc: BaseException, step: str) -> str:
    """A failed step's error in one line: a file or folder gone as the command line says it (Spark's error for one
    read in a task starts with py4j's "An error occurred while calling ..."), else the exception's first line."""
    exc = as_missing_file(exc, step) or exc
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def status_file_path(config: Config) -> str | None:
    """Where the JSON status goes: `[run] status_file`, else beside the land state on a local warehouse."""
    if config.run.status_file:
        return config.run.status_file
    if LocalFiles.is_local(config.warehouse):
        return str(LocalFiles.local_path(DatabasePaths.of(config.warehouse, config.database).run_status))
    return None


class Service:
    def __init__(self, spark: SparkSession, config: Config, *, debug: bool = False):
        self.spark, self.config, self.policy, self.debug = spark, config, config.run, debug
        self.stopping = threading.Event()  # a signal came: finish the steps under way, then stop
        self.wake = threading.Event()  # something changed: a compaction ended, or a signal came
        self._lock = threading.Lock()  # guards everything below, shared with the compaction threads
        self._compacting: dict[str, float] = {}  # table -> monotonic start
        self._not_before: dict[str, float] = {}  # table -> monotonic time before which a failed one is not retried
        self._tables: dict[str, dict[str, Any]] = {}  # table -> this process's counters
        self._land: dict[str, Any] = {"lands": 0, "failures": 0, "events_in": 0, "rows_out": 0, "quarantined": 0,
                                      "skipped": 0, "held": 0, "held_landed": 0, "last_at": None, "last_seconds": None,
                                      "last_error": None, "idle": False}
        self._rows: list[dict[str, Any]] = []
        self._state = "running"
        self._started_at = _now_iso()
        self._status_file = status_file_path(config)
        self._files_only = LocalFiles.is_local(config.warehouse)

    # -- the loop ---------------------------------------------------------------------------------

    def run(self) -> None:
        started = time.monotonic()
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        server = None
        if self.policy.metrics_port:
            server = metrics.serve(self.policy.metrics_host, self.policy.metrics_port, self.snapshot, time.time)
        say(self._banner())
        self._finish_interrupted_compactions()
        executor = ThreadPoolExecutor(max_workers=self.policy.parallel_compactions, thread_name_prefix="compact")
        land_failures = 0
        next_land = time.monotonic()
        try:
            while not self.stopping.is_set():
                if time.monotonic() >= next_land:
                    next_land = time.monotonic() + self.policy.interval_seconds
                    land_failures = 0 if self._land_step() else land_failures + 1
                    if land_failures >= MAX_LAND_FAILURES_IN_A_ROW:
                        raise LakecompactError(
                            f"run: {land_failures} land steps failed in a row (last: {self._land['last_error']}); "
                            "stopping so that a restart can recover"
                        )
                self._refresh()
                self._schedule(executor)
                self._publish()
                self.wake.wait(timeout=max(0.0, next_land - time.monotonic()))
                self.wake.clear()
        finally:
            with self._lock:
                under_way = sorted(self._compacting)
                self._state = "stopping"
            if under_way:
                say(f"run: stopping; finishing the compaction of {', '.join(under_way)}")
            executor.shutdown(wait=True, cancel_futures=True)
            with self._lock:
                self._state = "stopped"
            self._refresh()
            self._publish()
            if server:
                server.shutdown()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        compactions = sum(t.get("compactions", 0) for t in self._tables.values())
        say(f"run: stopped after {self._land['lands']} land step(s) and {compactions} compaction(s), "
            f"up {seconds_since(started)}")

    def _banner(self) -> str:
        triggers = " or ".join(f"{name} = {plain(getattr(self.policy, name))}" for name in RUN_TRIGGERS
                               if getattr(self.policy, name))
        served = (f"metrics on http://{self.policy.metrics_host}:{self.policy.metrics_port}/metrics"
                  if self.policy.metrics_port else "no metrics endpoint")
        return (f"run: landing every {plain(self.policy.interval_seconds)}s, compacting a table when {triggers} "
                f"(at most {self.policy.parallel_compactions} at once); {served}; status file "
                f"{self._status_file or '(none)'}; pid {os.getpid()}; SIGTERM or Ctrl-C stops after the current step")

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.stopping.is_set():
            # a second signal: stop now; every step is safe to kill, and the next start recovers it
            os.write(2, b"run: second signal, exiting now; the next start recovers the interrupted step\n")
            os._exit(128 + signum)
        # os.write: print() may be in the middle of a line of the main thread, and is not reentrant
        os.write(1, f"run: {signal.Signals(signum).name}: stopping after the current step\n".encode())
        self.stopping.set()
        self.wake.set()

    # -- the steps ---------------------------------------------------------------------------------

    def _finish_interrupted_compactions(self) -> None:
        """A compaction killed half-way left its lock file: finish it now, as `compact` would, before landing.
        (A land killed half-way is finished by the first land step: it lands the same batch again.)"""
        catalog = Catalog(None if self._files_only else self.spark, self.config)
        for table in catalog.tables():
            if lock_holder(catalog.storage, catalog.paths(table).compaction_lock) is not None:
                say(f"run: {table}: a compaction was interrupted; finishing it")
                compact(self.spark, self.config, [table], skip_busy=True)

    def _land_step(self) -> bool:
        """One land; True unless it failed (a busy lander elsewhere is not a failure)."""
        started = time.monotonic()
        self.spark.sparkContext.setLocalProperty("spark.scheduler.pool", "land")
        try:
            report = land(self.spark, self.config, quiet_when_idle=True)
        except LockHeld as busy:
            say(f"run: land skipped, {busy}")
            return True
        except Exception as exc:  # noqa: BLE001 - a long-running process reports a failed step and goes on
            self._failed("land", exc)
            with self._lock:
                self._land["failures"] += 1
                self._land["last_error"] = _first_line(exc, "land")
            return False
        if report.batch is None and not self._land["idle"]:
            say("run: nothing new to land; waiting for events (quiet until some arrive)")
        with self._lock:
            self._land["idle"] = report.batch is None
            self._land["lands"] += 1
            self._land["events_in"] += report.events_in
            self._land["rows_out"] += sum(report.rows_out.values())
            self._land["quarantined"] += sum(report.quarantined.values())
            self._land["skipped"] += report.skipped
            self._land["held"] += sum(report.held.values())
            self._land["held_landed"] += sum(report.held_landed.values())
            self._land["last_at"] = _now_iso()
            self._land["last_seconds"] = round(time.monotonic() - started, 3)
            self._land["last_error"] = None
        return True

    def _schedule(self, executor: ThreadPoolExecutor) -> None:
        """Start the compactions that are due, up to `parallel_compactions` at a time."""
        now, clock = time.time(), time.monotonic()
        for row in self._rows:
            table = table_of(row)
            with self._lock:
                if ("base_version" not in row or table in self._compacting
                        or len(self._compacting) >= self.policy.parallel_compactions
                        or self._not_before.get(table, 0) > clock):
                    continue
                reason = compaction_due(row, self.policy, now)
                if reason is None or self.stopping.is_set():
                    continue
                self._compacting[table] = clock
            say(f"run: compacting {table}: {reason}")
            executor.submit(self._compact, table)

    def _compact(self, table: str) -> None:
        context = self.spark.sparkContext
        context.setLocalProperty("spark.scheduler.pool", f"compact-{table}")
        context.setJobDescription(f"lakecompact run: compact {table}")
        with self._lock:
            counters = self._tables.setdefault(table, {"compactions": 0, "compaction_failures": 0, "last_error": None})
        try:
            reports = compact(self.spark, self.config, [table], skip_busy=True)
        except Exception as exc:  # noqa: BLE001 - the table is tried again after the next land step
            self._failed(f"compact {table}", exc)
            with self._lock:
                counters["compaction_failures"] += 1
                counters["last_error"] = _first_line(exc, f"compact {table}")
                self._not_before[table] = time.monotonic() + self.policy.interval_seconds
        else:
            with self._lock:
                counters["compactions"] += len(reports)
                counters["last_error"] = None
        finally:
            with self._lock:
                self._compacting.pop(table, None)
            self.wake.set()

    def _failed(self, step: str, exc: BaseException) -> None:
        warn(f"run: {step} failed: {_first_line(exc, step)}")
        if self.debug:
            traceback.print_exc()

    # -- what operators see ------------------------------------------------------------------------

    def _refresh(self) -> None:
        try:
            rows = status(None if self._files_only else self.spark, self.config)
        except Exception as exc:  # noqa: BLE001 - the last snapshot stays served
            self._failed("status", exc)
            return
        with self._lock:
            self._rows = rows

    def snapshot(self) -> dict[str, Any]:
        """What /status, /metrics and the status file show; safe to call from any thread."""
        with self._lock:
            tables = []
            for row in self._rows:
                table = table_of(row)
                counters = self._tables.get(table, {})
                tables.append({**row, "compacting": table in self._compacting,
                               "compactions": counters.get("compactions", 0),
                               "compaction_failures": counters.get("compaction_failures", 0),
                               "last_error": counters.get("last_error")})
            return {"pid": os.getpid(), "state": self._state, "started_at": self._started_at,
                    "updated_at": _now_iso(), "land": dict(self._land), "tables": tables}

    def _publish(self) -> None:
        """Write the status file whole (a reader never sees half of it)."""
        if not self._status_file:
            return
        target = LocalFiles.local_path(self._status_file)
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = target.with_name(f".{target.name}.{os.getpid()}")
        scratch.write_text(json.dumps(self.snapshot(), indent=1), encoding="utf-8")
        os.replace(scratch, target)


def run(spark: SparkSession, config: Config, *, debug: bool = False) -> None:
    Service(spark, config, debug=debug).run()
