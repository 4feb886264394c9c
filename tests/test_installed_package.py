"""The package as a user installs it: the wheel of the tree in a fresh venv outside the checkout, every command run
from a folder outside it. Every module imports, each command explains itself, `class-archive` builds an archive
and `demo` lands, compacts and prints the shipped events. (`verify` of the installed package against the stack's
PostgreSQL: tests/e2e/test_verify_cli.py.)"""

from __future__ import annotations

import json
import subprocess

import pytest

from lakecompact.cli import COMMANDS
from tests.support.cli import process_env
from tests.support.wheel import ROOT, build_wheel, install_in_venv

# in the venv: every module of the installed package imported, each failure kept ({} when all import)
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import lakecompact
failed = {}
def note(name):
    failed[name] = repr(sys.exc_info()[1])
names = []
for module in pkgutil.walk_packages(lakecompact.__path__, "lakecompact.", onerror=note):
    if module.name != "lakecompact.__main__":  # it runs the command line
        names.append(module.name)
        try:
            importlib.import_module(module.name)
        except Exception as error:
            failed[module.name] = repr(error)
print(json.dumps({"file": lakecompact.__file__, "modules": names, "failed": failed}))
"""


def _modules(folder, package: str) -> set[str]:
    """The modules the tree holds in a folder that is installed as `package`."""
    names = {".".join((package, *p.relative_to(folder).with_suffix("").parts)) for p in folder.rglob("*.py")}
    return {name.removesuffix(".__init__") for name in names}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's folder, a folder outside the checkout to run from)."""
    root = tmp_path_factory.mktemp("installed")
    assert not root.resolve().is_relative_to(ROOT)
    install_in_venv(build_wheel(root / "wheel"), root / "venv")
    (root / "work").mkdir()
    return root / "venv", root / "work"


def _run(installed, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The venv's `lakecompact` command, from the folder outside the checkout."""
    venv, work = installed
    environment = {**process_env(), **env}
    environment.pop("PYTHONPATH", None)
    return subprocess.run([str(venv / "bin" / "lakecompact"), *args], cwd=work, env=environment,
                          capture_output=True, text=True, check=False, timeout=1200)


def test_every_module_of_the_installed_package_imports_from_the_venv(installed):
    venv, work = installed
    result = subprocess.run([str(venv / "bin" / "python"), "-c", IMPORT_ALL], cwd=work, capture_output=True,
                            text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["file"].startswith(str(venv)), found["file"]  # not the checkout's editable install
    assert found["failed"] == {}
    tree = _modules(ROOT / "lakecompact", "lakecompact") | _modules(ROOT / "sql_templates", "lakecompact.sql_templates")
    assert set(found["modules"]) == tree - {"lakecompact", "lakecompact.__main__"}


def test_the_version_and_every_commands_help(installed):
    version = _run(installed, "--version")
    assert (version.returncode, version.stdout) == (0, "lakecompact 0.1.0\n")
    for command in COMMANDS:
        shown = _run(installed, command.name, "--help")
        assert shown.returncode == 0, (command.name, shown.stderr)
        assert shown.stdout.split("example:\n", 1)[1].strip() == command.example


@pytest.mark.slow
@pytest.mark.spark
def test_class_archive_and_demo(installed, tmp_path):
    """class-archive builds an archive (its own cache folder: not the one the checkout's setup filled), and the demo,
    started with it, prints the tables it landed and compacted from the events shipped in the package."""
    cache = tmp_path / "cache"
    archive = _run(installed, "class-archive", LAKECOMPACT_CACHE=str(cache))
    assert archive.returncode == 0, archive.stdout + archive.stderr
    assert "class archive: built in " in archive.stdout and "warning" not in archive.stderr, archive.stderr
    assert [p.suffix for p in cache.glob("spark-classes-*.jsa")] == [".jsa"]
    # its last line: the option that gives it to a spark-submit's driver
    assert archive.stdout.splitlines()[-1] == f"  --driver-java-options -XX:SharedArchiveFile={next(cache.glob('*.jsa'))}"

    demo = _run(installed, "demo", "--warehouse", str(tmp_path / "demo"), LAKECOMPACT_CACHE=str(cache))
    assert demo.returncode == 0, demo.stderr
    venv = installed[0]
    assert "events from " + str(venv) in demo.stdout.splitlines()[0]  # the package's own copy
    final = demo.stdout.split("== 3. compact again, and read the tables")[1]
    assert _shown(final, "lake.public_customers") == [
        ["id", "name", "email", "__op", "position"],
        ["1", "Sally T.", "sally.t@example.com", "u", "lsn 1400"],
        ["2", "George Bailey", "gbailey@example.com", "r", "lsn 1000"],
        ["4", "Anne Kretchmar", "annek@example.com", "c", "lsn 1100"],
    ]
    assert _shown(final, "lake.shop_orders") == [
        ["order_id", "amount", "status", "__op", "position"],
        ["10", "19.99", "shipped", "u", "mysql-bin.000009:880"],
        ["12", "120.50", "placed", "c", "mysql-bin.000010:4"],
        ["13", "7.25", "placed", "c", "mysql-bin.000010:4 row 1"],
    ]
    quarantined = "warning: _unknown: 1 events quarantined in batch 2; see: lakecompact quarantine --table _unknown"
    *said, finished = demo.stderr.splitlines()  # no JVM warning either
    assert said == [quarantined] and finished.startswith("lakecompact demo: finished in "), demo.stderr
    next(cache.glob("*.jsa")).unlink()  # hundreds of MB


def _shown(output: str, table: str) -> list[list[str]]:
    """The demo's printed table, a list of cells a line, without the columns that are the same in every run or
    too long to print whole (placed_at, bio, ...)."""
    lines = output.split(f"{table}:\n", 1)[1].splitlines()
    shown = lines[:next(i for i, line in enumerate(lines) if not line.startswith("  "))]
    rows = [[cell.strip() for cell in line.split(" | ")] for line in shown]
    kept = [i for i, name in enumerate(rows[0])
            if name in ("id", "name", "email", "order_id", "amount", "status", "__op", "position")]
    return [[row[i] for i in kept] for row in rows]
