"""The suite refuses to start when the package its processes import is not this checkout's
(tests/support/cli.installed_elsewhere, checked at the start of every run by tests/conftest.py)."""

from __future__ import annotations

import stat

from tests.support.cli import ROOT, installed_elsewhere


def _python(tmp_path, script: str):
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\n{script}\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return python


def test_this_checkout_installed_is_fine():
    assert installed_elsewhere() is None


def test_a_package_installed_from_another_folder_is_named_with_the_fix(tmp_path):
    python = _python(tmp_path, "echo /gone/clone/lakecompact/__init__.py")
    assert installed_elsewhere(python) == (
        f"{python} imports lakecompact from /gone/clone/lakecompact, not from this checkout ({ROOT}): run "
        f"scripts/setup.sh (pip install -e {ROOT})")


def test_no_package_installed_is_named_with_the_fix(tmp_path):
    python = _python(tmp_path, "echo \"ModuleNotFoundError: No module named 'lakecompact'\" >&2; exit 1")
    assert installed_elsewhere(python) == (
        f"lakecompact is not installed for {python}: run scripts/setup.sh (pip install -e {ROOT})")
