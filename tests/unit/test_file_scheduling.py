"""The order pytest-xdist hands test files out in (tests/conftest.py): the long files first, then the others with
the most tests first."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_FILES, long_first

ROOT = Path(__file__).resolve().parents[2]


def _scope(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def test_the_long_files_come_first_in_their_order_then_the_files_with_most_tests():
    nodeids = ["tests/a.py::one", "tests/b.py::one", "tests/b.py::two", LONG_FILES[1] + "::x",
               "tests/c.py::one", "tests/c.py::two", "tests/c.py::three", LONG_FILES[0] + "::y", LONG_FILES[1] + "::z"]
    assert long_first(nodeids, _scope) == [
        LONG_FILES[0] + "::y", LONG_FILES[1] + "::x", LONG_FILES[1] + "::z",
        "tests/c.py::one", "tests/c.py::two", "tests/c.py::three", "tests/b.py::one", "tests/b.py::two",
        "tests/a.py::one"]


def test_every_long_file_exists():
    assert [name for name in LONG_FILES if not (ROOT / name).is_file()] == []
