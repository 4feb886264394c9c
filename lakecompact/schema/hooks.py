"""Schema-change hooks: tell other systems, once per change, that a table's schema changed.

A change is the JSON payload `payload()` builds. `fire()` runs every configured hook for it: a Python
callable (`module:function`, called with the payload dict), a shell command (payload JSON on stdin,
non-zero exit or timeout = failure), or an HTTP POST of the payload (retried with backoff on 5xx,
429 and connection errors). Each hook fires once per change (keyed by table and `schema_hash`): a
success is recorded in a JSON state file; a failure is returned, printed as a warning, and tried
again on the next `fire()`. Nothing a hook does raises into the caller.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import requests

from lakecompact import retry
from lakecompact.config import HookConfig, url_without_path
from lakecompact.errors import LakecompactError
from lakecompact.report import warn
from lakecompact.schema.evolution import Change, classify

STATE_FILE = "hooks_fired.json"  # the record in a local directory; a table's is `TablePaths.hooks_fired`
_PAYLOAD_KEYS = (
    "table",
    "database",
    "old_version",
    "new_version",
    "schema_hash",
    "changes",
    "classification",
    "at",
)


class HookError(LakecompactError):
    """A change handed to `fire()` that is not a hook payload (a caller's mistake, not a hook failure)."""


class HookStore(Protocol):
    """Where the fired-hooks record is kept; `lakecompact.lake.storage.Storage` is one."""

    def exists(self, path: str) -> bool: ...

    def read_json(self, path: str) -> Any: ...

    def write_json(self, path: str, value: Any, *, overwrite: bool = False) -> None: ...


@dataclass(frozen=True)
class HookResult:
    """What happened to one hook in one `fire()`: fired now, fired before (skipped), or failed."""

    hook: str
    status: Literal["fired", "already_fired", "failed"]
    error: str = ""
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def payload(
    table: str,
    database: str,
    old_version: int | None,
    new_version: int,
    schema_hash: str,
    changes: Iterable[Change | Mapping[str, Any]],
    *,
    at: datetime.datetime | str | None = None,
) -> dict[str, Any]:
    """The JSON description of a schema change that every hook receives."""
    items = [c if isinstance(c, Change) else Change(**c) for c in changes]
    when = at or datetime.datetime.now(datetime.UTC)
    return {
        "table": table,
        "database": database,
        "old_version": old_version,
        "new_version": new_version,
        "schema_hash": schema_hash,
        "changes": [c.to_json() for c in items],
        "classification": classify(items),
        "at": when if isinstance(when, str) else when.isoformat(timespec="seconds"),
    }


def fire(
    hooks: Sequence[HookConfig],
    change: Mapping[str, Any],
    state: str | os.PathLike | HookStore,
    *,
    path: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[HookResult]:
    """Run each hook not yet fired for this change; returns one result per hook, never raises for a hook.

    `state` is a local directory (the record is `<dir>/<path or hooks_fired.json>`) or a store object;
    for a store, `path` is the record's full path (default `<store.root>/_state/hooks_fired.json`).
    """
    missing = [k for k in ("table", "schema_hash") if not change.get(k)]
    if missing:
        raise HookError(
            f"schema change for hooks: expected the keys {', '.join(_PAYLOAD_KEYS)}; missing {missing}"
        )
    store, record_path = _store(state, path)
    change_key = f"{change.get('database') or ''}.{change['table']}@{change['schema_hash']}"
    record = _read(store, record_path)
    if _forget_urls(record, hooks):
        _write(store, record_path, record)
    fired = record.setdefault("changes", {}).setdefault(change_key, {})
    results = []
    for hook in hooks:
        previous = fired.get(hook.id, {})
        if previous.get("status") == "fired":
            results.append(HookResult(hook.id, "already_fired", attempts=previous.get("attempts", 1)))
            continue
        attempts = int(previous.get("attempts", 0)) + 1
        error = _run(hook, dict(change), sleep)
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        if error is None:
            fired[hook.id] = {"status": "fired", "at": now, "attempts": attempts}
            results.append(HookResult(hook.id, "fired", attempts=attempts))
        else:
            fired[hook.id] = {"status": "failed", "at": now, "attempts": attempts, "error": error}
            results.append(HookResult(hook.id, "failed", error, attempts))
            warn(
                f"hook {hook.label} failed for {change_key} (attempt {attempts}; retried on the next run): {error}"
            )
        _write(store, record_path, record)
    return results


# -- running one hook: returns None on success, else the reason -------------------------------------


def _run(hook: HookConfig, body: dict[str, Any], sleep: Callable[[float], None]) -> str | None:
    runners = {"python": _run_python, "command": _run_command, "http": _run_http}
    if hook.kind not in runners:
        raise HookError(f"hook {hook.label}: expected a kind of {', '.join(runners)}, got {hook.kind!r}")
    runner = runners[hook.kind]
    try:
        error = runner(hook, body, sleep)
    except Exception as exc:  # noqa: BLE001 - a hook must never break the job that fires it
        error = f"{type(exc).__name__}: {exc}"
    # every error text of an HTTP hook, whoever wrote it, without the URL's path and query (often a webhook's secret)
    return _without_url(error, hook.target) if error is not None and hook.kind == "http" else error


def _run_python(hook: HookConfig, body: dict[str, Any], _sleep: Callable[[float], None]) -> str | None:
    module_name, _, function_name = hook.target.partition(":")
    function = getattr(importlib.import_module(module_name), function_name, None)
    if not callable(function):
        return f"{hook.target}: expected a callable {function_name} in module {module_name}"
    outcome: dict[str, str | None] = {"error": "still running"}

    def call() -> None:
        try:
            function(json.loads(json.dumps(body)))  # a private copy, as the other kinds get
            outcome["error"] = None
        except BaseException as error:  # noqa: BLE001 - reported, not raised
            outcome["error"] = f"{type(error).__name__}: {error}"

    thread = threading.Thread(target=call, name=f"hook {hook.label}", daemon=True)
    thread.start()
    thread.join(hook.timeout_seconds)
    if thread.is_alive():
        return f"did not return within {hook.timeout_seconds}s (left running in the background)"
    return outcome["error"]


def _run_command(hook: HookConfig, body: dict[str, Any], _sleep: Callable[[float], None]) -> str | None:
    env = {
        **os.environ,
        "LAKECOMPACT_TABLE": str(body.get("table", "")),
        "LAKECOMPACT_DATABASE": str(body.get("database", "")),
        "LAKECOMPACT_SCHEMA_HASH": str(body.get("schema_hash", "")),
        "LAKECOMPACT_CLASSIFICATION": str(body.get("classification", "")),
    }
    process = subprocess.Popen(
        hook.target,
        shell=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,  # its own process group, so a timeout ends the command's children too
    )
    try:
        _, stderr = process.communicate(json.dumps(body), timeout=hook.timeout_seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return f"command did not finish within {hook.timeout_seconds}s and was stopped"
    if process.returncode != 0:
        tail = stderr.strip().splitlines()[-3:]
        return f"command exited with status {process.returncode}" + (f": {' | '.join(tail)}" if tail else "")
    return None


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.communicate()


def _run_http(hook: HookConfig, body: dict[str, Any], sleep: Callable[[float], None]) -> str | None:
    headers = {
        "Content-Type": "application/json",
        **{k: os.path.expandvars(v) for k, v in hook.headers.items()},
    }
    data = json.dumps(body).encode()
    last = ""
    for _ in retry.attempts(hook.retries, hook.backoff_seconds, sleep=sleep):
        try:
            response = requests.post(hook.target, data=data, headers=headers, timeout=hook.timeout_seconds)
        except (requests.ConnectionError, requests.Timeout) as error:
            last = f"{type(error).__name__}: {error}"
            continue
        if 200 <= response.status_code < 300:
            return None
        last = f"POST {hook.target} answered HTTP {response.status_code}: {response.text.strip()[:200]}"
        if response.status_code not in retry.RETRY_STATUS:
            return last
    return f"{last} (after {hook.retries + 1} attempts)"


def _without_url(text: str, url: str) -> str:
    """`text` (an error naming the URL, or its path and query as requests does) without the path and query."""
    parts = urllib.parse.urlsplit(url)
    path_and_query = parts.path + (f"?{parts.query}" if parts.query else "")
    text = text.replace(url, url_without_path(url))
    return text.replace(path_and_query, "/…") if len(path_and_query) > 1 else text


# -- the fired-hooks record -----------------------------------------------------------------------


class _LocalStore:
    """A local directory as a HookStore; writes replace the file in one step."""

    def exists(self, path: str) -> bool:
        return Path(path).exists()

    def read_json(self, path: str) -> Any:
        return json.loads(Path(path).read_text(encoding="utf-8"))

    def write_json(self, path: str, value: Any, *, overwrite: bool = False) -> None:
        target = Path(path)
        if target.exists() and not overwrite:
            raise FileExistsError(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(value, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, target)


def _store(state: str | os.PathLike | HookStore, path: str | None) -> tuple[HookStore, str]:
    if isinstance(state, (str, os.PathLike)):
        return _LocalStore(), str(Path(state) / (path or STATE_FILE))
    if not all(callable(getattr(state, m, None)) for m in ("exists", "read_json", "write_json")):
        raise HookError(
            f"hook state: expected a directory path or an object with exists/read_json/write_json, got {state!r}"
        )
    if path is None:
        root = getattr(state, "root", None)
        if root is None:
            raise HookError(
                "hook state: a store without a root needs an explicit path for the fired-hooks record"
            )
        # imported here: the paths bring in pyspark, which a local directory's record does not need
        from lakecompact.lake.paths import TablePaths

        path = TablePaths(str(root).rstrip("/")).hooks_fired
    return state, path


def _read(store: HookStore, path: str) -> dict[str, Any]:
    try:
        if not store.exists(path):
            return {"version": 1, "changes": {}}
        record = store.read_json(path)
        if not isinstance(record, dict):
            raise TypeError(f"expected a JSON object, got {type(record).__name__}")
        return record
    except Exception as error:  # noqa: BLE001 - an unreadable record must not stop the job; hooks may fire again
        warn(f"hook state {path} could not be read ({type(error).__name__}: {error}); treating it as empty")
        return {"version": 1, "changes": {}}


def _forget_urls(record: dict[str, Any], hooks: Sequence[HookConfig]) -> bool:
    """Re-key what a record written before the digest keeps under an unnamed HTTP hook's whole URL (so the hook does
    not fire again, and the URL leaves the file); whether anything moved."""
    moved = False
    former = {f"http:{hook.target}": hook for hook in hooks if hook.kind == "http" and not hook.name}
    for fired in record.get("changes", {}).values():
        for former_id, hook in former.items():
            if former_id in fired:
                outcome = fired.pop(former_id)
                if "error" in outcome:  # recorded before errors were cut too
                    outcome["error"] = _without_url(str(outcome["error"]), hook.target)
                fired.setdefault(hook.id, outcome)
                moved = True
    return moved


def _write(store: HookStore, path: str, record: dict[str, Any]) -> None:
    try:
        store.write_json(path, record, overwrite=True)
    except Exception as error:  # noqa: BLE001 - reported; the job goes on
        warn(
            f"hook state {path} could not be written ({type(error).__name__}: {error}); hooks may fire again"
        )
