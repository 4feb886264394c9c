"""`lakecompact` as separate processes, as an operator runs them: one command (`lakecompact`, `sql_lines`; whether
it was killed: `killed`), a `run` (`start_run`), the views read back by a `sql` process (`read_views`), on a minimal
config of the files source (`minimal_config`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: where a process runs `python -m lakecompact`


def installed_elsewhere(python: Path | str = sys.executable) -> str | None:
    """Why the tests would not run this checkout's package, or None: a process that does not start in the
    checkout (a spark-submit driver, the object-store script) imports the installed one, which must be this
    checkout's (scripts/setup.sh installs it editable)."""
    found = subprocess.run([str(python), "-c", "import lakecompact; print(lakecompact.__file__)"], cwd="/",
                           capture_output=True, text=True, check=False, timeout=60)
    if found.returncode != 0:
        return f"lakecompact is not installed for {python}: run scripts/setup.sh (pip install -e {ROOT})"
    package = Path(found.stdout.strip()).resolve().parent
    if package != ROOT / "lakecompact":
        return (f"{python} imports lakecompact from {package}, not from this checkout ({ROOT}): run "
                f"scripts/setup.sh (pip install -e {ROOT})")
    return None


def process_env(kill_at: str | None = None) -> dict[str, str]:
    """The environment of a `lakecompact` process: Spark's log at ERROR; with kill_at, it kills itself (SIGKILL)
    after that step (crashpoints.py)."""
    env = {**os.environ, "LAKECOMPACT_SPARK_LOG_LEVEL": "ERROR"}
    env.pop("LAKECOMPACT_KILL_AT", None)
    if kill_at:
        env["LAKECOMPACT_KILL_AT"] = kill_at
    return env


def lakecompact(config: Path, *args: str, kill_at: str | None = None, python: Path | str = sys.executable,
                cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """One `lakecompact` process; with kill_at, it kills itself (SIGKILL) after that step (crashpoints.py). `python`
    and `cwd`: another installation of the package (tests/support/wheel.py), run from another folder."""
    return subprocess.run(
        [str(python), "-m", "lakecompact", "--config", str(config), *args],
        check=False, cwd=cwd, env=process_env(kill_at), capture_output=True, text=True, timeout=600,
    )


def killed(result: subprocess.CompletedProcess) -> bool:
    """The process ended by SIGKILL (kill -9): its own at a kill_at step, or a test's."""
    return result.returncode == -signal.SIGKILL


def start(config: Path, *args: str, kill_at: str | None = None, own_group: bool = False) -> subprocess.Popen:
    """A `lakecompact` process, started (its output piped); `own_group`: in a process group of its own, so that
    the JVM it starts can be killed with it."""
    return subprocess.Popen([sys.executable, "-m", "lakecompact", "--config", str(config), *args], cwd=ROOT,
                            env=process_env(kill_at), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=own_group)


def start_run(config: Path, kill_at: str | None = None) -> subprocess.Popen:
    """A `lakecompact run` process, started (its output piped)."""
    return start(config, "run", kill_at=kill_at)


def sql_lines(config: Path, query: str) -> list[str]:
    """What a `sql` process prints for a query that must succeed, a line a row."""
    result = lakecompact(config, "sql", query)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def minimal_config(tmp_path: Path, extra: str = "") -> Path:
    """A config of the files source (events/*.jsonl under tmp_path) and a local warehouse; `extra` goes after the
    top-level keys, before [source]."""
    config = tmp_path / "lakecompact.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\n'
        'database  = "lake"\n'
        f"{extra}"
        "[source]\n"
        'kind  = "files"\n'
        f'paths = ["{tmp_path / "events"}/*.jsonl"]\n'
    )
    return config


def read_views(config: Path, database: str, tables) -> dict[str, dict[int, dict]]:
    """Each table's view as a `sql` process reads it: {table: {id: row}}, as the reference model gives it."""
    query = " UNION ALL ".join(f"SELECT '{t}' AS t, id, note, qty FROM `{database}`.{t}" for t in tables)
    read = lakecompact(config, "sql", query)
    assert read.returncode == 0, read.stderr
    seen: dict[str, dict] = {t: {} for t in tables}
    for line in read.stdout.splitlines():
        row = json.loads(line)
        seen[row.pop("t")][row["id"]] = {"id": row["id"], "note": row.get("note"), "qty": row.get("qty")}
    return seen
