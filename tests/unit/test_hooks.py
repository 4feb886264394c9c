"""Schema-change hooks of all three kinds: once per change, failures reported and retried on the next fire."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import types

import pytest

from lakecompact.errors import ConfigError
from lakecompact.schema.evolution import Change
from lakecompact.schema.hooks import STATE_FILE, HookConfig, HookError, HookResult, fire, payload
from tests.support.http import HookReceiver

CHANGE = payload(
    "orders",
    "lake",
    1,
    2,
    "3f2a9c0d1e2b4a5c",
    [Change("note", "added", None, "STRING"), Change("qty", "widened", "INT", "BIGINT")],
    at="2025-01-05T10:00:00+00:00",
)


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def probe(monkeypatch):
    """A Python module `hook_probe` whose functions record the payloads they get (or fail on demand)."""
    module = types.ModuleType("hook_probe")
    module.calls = []
    module.failures = []  # exceptions to raise, one per call, before succeeding
    module.release = threading.Event()

    def record(change):
        module.calls.append(change)
        if module.failures:
            raise module.failures.pop(0)

    def block(change):
        module.release.wait(10)

    module.record, module.block, module.not_callable = record, block, 42
    monkeypatch.setitem(sys.modules, "hook_probe", module)
    yield module
    module.release.set()


# -- the payload -----------------------------------------------------------------------------------


def test_payload_shape():
    assert CHANGE == {
        "table": "orders",
        "database": "lake",
        "old_version": 1,
        "new_version": 2,
        "schema_hash": "3f2a9c0d1e2b4a5c",
        "changes": [
            {"column": "note", "change": "added", "old_type": None, "new_type": "STRING"},
            {"column": "qty", "change": "widened", "old_type": "INT", "new_type": "BIGINT"},
        ],
        "classification": "compatible",
        "at": "2025-01-05T10:00:00+00:00",
    }
    bad = payload(
        "t",
        "db",
        1,
        2,
        "h",
        [{"column": "c", "change": "incompatible", "old_type": "STRING", "new_type": "INT"}],
    )
    assert bad["classification"] == "incompatible" and bad["at"].endswith("+00:00")


# -- python hooks and the fired-once record ---------------------------------------------------------


def test_python_hook_fires_once_per_change(probe, tmp_path):
    hook = HookConfig("python", "hook_probe:record")
    assert fire([hook], CHANGE, tmp_path) == [HookResult("python:hook_probe:record", "fired", attempts=1)]
    assert probe.calls == [CHANGE]
    assert fire([hook], CHANGE, tmp_path)[0].status == "already_fired"
    assert len(probe.calls) == 1

    record = json.loads((tmp_path / STATE_FILE).read_text())
    entry = record["changes"]["lake.orders@3f2a9c0d1e2b4a5c"]["python:hook_probe:record"]
    assert (entry["status"], entry["attempts"]) == ("fired", 1)

    newer = {**CHANGE, "schema_hash": "0000000000000001", "new_version": 3}
    assert fire([hook], newer, tmp_path)[0].status == "fired"
    assert [c["new_version"] for c in probe.calls] == [2, 3]


def test_failing_hook_is_reported_and_retried_on_the_next_fire(probe, tmp_path, capsys):
    probe.failures.append(RuntimeError("downstream catalog is down"))
    hooks = [
        HookConfig("python", "hook_probe:record", name="catalog"),
        HookConfig("command", "true", name="noop"),
    ]

    first = fire(hooks, CHANGE, str(tmp_path))
    assert [(r.hook, r.status) for r in first] == [("catalog", "failed"), ("noop", "fired")]
    assert first[0].error == "RuntimeError: downstream catalog is down" and not first[0].ok
    assert (
        "warning: hook catalog failed for lake.orders@3f2a9c0d1e2b4a5c (attempt 1" in capsys.readouterr().err
    )

    second = fire(hooks, CHANGE, str(tmp_path))
    assert [(r.hook, r.status, r.attempts) for r in second] == [
        ("catalog", "fired", 2),
        ("noop", "already_fired", 1),
    ]
    assert fire(hooks, CHANGE, str(tmp_path))[0].status == "already_fired"
    assert len(probe.calls) == 2


def test_python_hook_errors_never_raise(probe, tmp_path):
    results = fire(
        [
            HookConfig("python", "no_such_module_here:f"),
            HookConfig("python", "hook_probe:missing"),
            HookConfig("python", "hook_probe:not_callable"),
        ],
        CHANGE,
        tmp_path,
    )
    assert [r.status for r in results] == ["failed"] * 3
    assert results[0].error.startswith("ModuleNotFoundError: No module named 'no_such_module_here'")
    assert results[1].error == "hook_probe:missing: expected a callable missing in module hook_probe"


def test_python_hook_timeout(probe, tmp_path):
    started = time.monotonic()
    result = fire([HookConfig("python", "hook_probe:block", timeout_seconds=0.2)], CHANGE, tmp_path)[0]
    assert result.status == "failed" and "did not return within 0.2s" in result.error
    assert time.monotonic() - started < 5


# -- command hooks ---------------------------------------------------------------------------------


def test_command_hook_gets_the_payload_on_stdin(tmp_path):
    out = tmp_path / "payload.json"
    hook = HookConfig(
        "command", f'cat > "{out}" && echo "$LAKECOMPACT_TABLE $LAKECOMPACT_CLASSIFICATION" >> "{out}.env"'
    )
    assert fire([hook], CHANGE, tmp_path / "state")[0].status == "fired"
    assert json.loads(out.read_text()) == CHANGE
    assert (tmp_path / "payload.json.env").read_text() == "orders compatible\n"


def test_failing_command_then_retry(tmp_path):
    marker = tmp_path / "tried-once"
    hook = HookConfig(
        "command", f'test -f "{marker}" || {{ touch "{marker}"; echo "catalog refused" >&2; exit 3; }}'
    )
    first = fire([hook], CHANGE, tmp_path / "state")[0]
    assert first.status == "failed" and first.error == "command exited with status 3: catalog refused"
    second = fire([hook], CHANGE, tmp_path / "state")[0]
    assert (second.status, second.attempts) == ("fired", 2)


def test_command_timeout_stops_the_command(tmp_path):
    started = time.monotonic()
    result = fire([HookConfig("command", "sleep 30; echo late", timeout_seconds=0.3)], CHANGE, tmp_path)[0]
    assert result.status == "failed" and result.error == "command did not finish within 0.3s and was stopped"
    assert time.monotonic() - started < 5


# -- HTTP hooks against a local server ------------------------------------------------------------


@pytest.fixture
def receiver():
    with HookReceiver() as running:
        yield running


def test_http_hook_posts_the_payload_with_headers(receiver, tmp_path, monkeypatch):
    monkeypatch.setenv("HOOK_TOKEN", "t0ken")
    hook = HookConfig(
        "http", receiver.url, headers={"Authorization": "Bearer ${HOOK_TOKEN}", "X-Source": "lakecompact"}
    )
    assert fire([hook], CHANGE, tmp_path)[0].status == "fired"
    body, headers = receiver.received[0]
    assert body == CHANGE
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == "Bearer t0ken" and headers["X-Source"] == "lakecompact"
    assert fire([hook], CHANGE, tmp_path)[0].status == "already_fired" and len(receiver.received) == 1


def test_http_hook_retries_5xx_with_backoff(receiver, tmp_path):
    receiver.answers = [503, 500]
    sleeps = Sleeps()
    hook = HookConfig("http", receiver.url, retries=3, backoff_seconds=0.1)
    assert fire([hook], CHANGE, tmp_path, sleep=sleeps)[0].status == "fired"
    assert len(receiver.received) == 3 and sleeps == pytest.approx([0.1, 0.2])


def test_http_hook_failing_every_attempt_is_retried_on_the_next_fire(receiver, tmp_path, capsys):
    receiver.answers = [502] * 3
    sleeps = Sleeps()
    hook = HookConfig("http", receiver.url, retries=2, backoff_seconds=0.05)
    failed = fire([hook], CHANGE, tmp_path, sleep=sleeps)[0]
    assert failed.status == "failed"
    assert failed.error == f"POST {receiver.url.removesuffix('schema-changes')}… answered HTTP 502:  (after 3 attempts)"
    assert "warning: hook http:" in capsys.readouterr().err
    assert fire([hook], CHANGE, tmp_path, sleep=sleeps)[0].status == "fired"
    assert len(receiver.received) == 4


def test_an_http_hooks_path_and_query_are_never_printed_or_recorded(receiver, tmp_path, capsys):
    """A webhook URL often holds its secret in its path or query (Slack, Teams): warnings and the recorded errors
    show its scheme, host and port only."""
    secret, token = "T0000/B0000/s3cr3tw3bh00k", "qu3ry-t0ken"
    receiver.answers = [500]
    url = receiver.url.replace("/schema-changes", f"/services/{secret}?token={token}")
    failed = fire([HookConfig("http", url, retries=0)], CHANGE, tmp_path)[0]
    assert failed.error == f"POST http://127.0.0.1:{receiver.server.server_address[1]}/… answered HTTP 500:  (after 1 attempts)"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/services/{secret}?token={token}"
    unreachable = fire([HookConfig("http", closed, retries=0)], CHANGE, tmp_path / "other")[0]
    assert unreachable.status == "failed" and unreachable.error.startswith("ConnectionError: ")
    printed = capsys.readouterr().err
    assert printed.count("warning: hook http:http://127.0.0.1:") == 2
    states = [(tmp_path / STATE_FILE).read_text(), (tmp_path / "other" / STATE_FILE).read_text()]
    assert all('"status": "failed"' in state for state in states)
    recorded = [failed.hook, failed.error, unreachable.hook, unreachable.error, printed, *states]
    assert not [text for text in recorded if secret in text or token in text or "services" in text], recorded
    # two unnamed hooks on one host stay two hooks
    assert failed.hook != HookConfig("http", receiver.url).id and failed.hook.startswith("http:http://127.0.0.1:")


def test_a_state_file_that_keys_an_http_hook_by_its_url_is_rekeyed_without_firing_again(receiver, tmp_path):
    """Records written before hooks were keyed by a digest keep an unnamed HTTP hook under `http:<whole URL>`: that
    hook is not fired again for the changes it fired for, and the URL (with an error naming it) leaves the file."""
    url = receiver.url + "/s3cr3t?token=qu3ry"
    key = f"{CHANGE['database']}.{CHANGE['table']}@{CHANGE['schema_hash']}"
    other = {**CHANGE, "schema_hash": "0123456789abcdef"}
    other_key = f"{CHANGE['database']}.{CHANGE['table']}@{other['schema_hash']}"
    (tmp_path / STATE_FILE).write_text(json.dumps({"version": 1, "changes": {
        key: {f"http:{url}": {"status": "fired", "at": "2026-01-01T00:00:00+00:00", "attempts": 1}},
        other_key: {f"http:{url}": {"status": "failed", "attempts": 2, "error": f"ConnectionError: {url} refused"}},
    }}))
    hook = HookConfig("http", url, retries=0)
    assert fire([hook], CHANGE, tmp_path) == [HookResult(hook.id, "already_fired", attempts=1)]
    assert receiver.received == []
    state = (tmp_path / STATE_FILE).read_text()
    assert "s3cr3t" not in state and "qu3ry" not in state, state
    assert json.loads(state)["changes"][other_key][hook.id]["error"].startswith("ConnectionError: http://127.0.0.1:")
    assert fire([hook], other, tmp_path) == [HookResult(hook.id, "fired", attempts=3)]
    assert len(receiver.received) == 1
    assert json.loads((tmp_path / STATE_FILE).read_text())["changes"][key] == {
        hook.id: {"status": "fired", "at": "2026-01-01T00:00:00+00:00", "attempts": 1}}


def test_http_hook_4xx_is_not_retried_within_a_fire(receiver, tmp_path):
    receiver.answers = [400]
    sleeps = Sleeps()
    result = fire([HookConfig("http", receiver.url, retries=3)], CHANGE, tmp_path, sleep=sleeps)[0]
    assert result.status == "failed" and "answered HTTP 400" in result.error
    assert len(receiver.received) == 1 and sleeps == []


def test_http_hook_unreachable_does_not_raise(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    result = fire(
        [HookConfig("http", f"http://127.0.0.1:{port}/x", retries=1)], CHANGE, tmp_path, sleep=sleeps
    )[0]
    assert result.status == "failed" and "ConnectionError" in result.error and len(sleeps) == 1


# -- state stores ----------------------------------------------------------------------------------


class MemoryStore:
    """The three methods of lakecompact.lake.storage.Storage that hooks use, over a dict."""

    def __init__(self, root: str):
        self.root, self.files = root, {}

    def exists(self, path):
        return path in self.files

    def read_json(self, path):
        return json.loads(self.files[path])

    def write_json(self, path, value, *, overwrite=False):
        if path in self.files and not overwrite:
            raise FileExistsError(path)
        self.files[path] = json.dumps(value)


def test_a_storage_like_state_store(probe):
    store = MemoryStore("s3a://lake/warehouse/lake/orders")
    hook = HookConfig("python", "hook_probe:record")
    assert fire([hook], CHANGE, store)[0].status == "fired"
    assert list(store.files) == ["s3a://lake/warehouse/lake/orders/_state/hooks_fired.json"]
    assert fire([hook], CHANGE, store)[0].status == "already_fired"
    assert fire([hook], CHANGE, store, path="s3a://elsewhere/hooks.json")[0].status == "fired"
    assert len(probe.calls) == 2


def test_an_unreadable_state_file_warns_and_fires_again(probe, tmp_path, capsys):
    (tmp_path / STATE_FILE).write_text("{not json")
    assert fire([HookConfig("python", "hook_probe:record")], CHANGE, tmp_path)[0].status == "fired"
    assert "could not be read" in capsys.readouterr().err
    assert json.loads((tmp_path / STATE_FILE).read_text())["changes"]


def test_a_change_without_schema_hash_is_the_callers_mistake(tmp_path):
    with pytest.raises(HookError, match=r"missing \['schema_hash'\]"):
        fire([], {"table": "orders"}, tmp_path)
    with pytest.raises(
        HookError, match="expected a directory path or an object with exists/read_json/write_json"
    ):
        fire([], CHANGE, object())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"kind": "email", "target": "x"},
            "hooks.email.kind: expected one of python, command, http, got 'email'",
        ),
        (
            {"kind": "python", "target": "module.function"},
            "hooks.python.target: expected a Python callable as module:function",
        ),
        (
            {"kind": "http", "target": "hooks.local/x"},
            "hooks.http.target: expected an http:// or https:// URL",
        ),
        ({"kind": "command", "target": " "}, "hooks.command.target: expected a non-empty string"),
        (
            {"kind": "command", "target": "x", "timeout_seconds": 0},
            "hooks.command.timeout_seconds: expected a number",
        ),
        (
            {"kind": "http", "target": "http://h", "retries": -1},
            "hooks.http.retries: expected a whole number >= 0",
        ),
        (
            {"kind": "http", "target": "http://h", "headers": {"X": 1}},
            "hooks.http.headers: expected a table of string",
        ),
    ],
)
def test_hook_config_errors(settings, message):
    with pytest.raises(ConfigError) as caught:
        HookConfig(**settings)
    assert str(caught.value).startswith(message)
