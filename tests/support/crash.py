"""Simulated crashes: a method made to raise once, in the middle of a land or a compaction, so that a test can
check that the next run finishes (or redoes) what the interrupted one began."""

from __future__ import annotations


class Crash(RuntimeError):
    pass


def crash_once(monkeypatch, owner, name: str, when=lambda *args, **kwargs: True):
    """Make owner.name raise Crash the first time it is called with arguments `when` accepts."""
    original = getattr(owner, name)
    crashed = []

    def patched(*args, **kwargs):
        if not crashed and when(*args, **kwargs):
            crashed.append(True)
            raise Crash(f"simulated crash in {owner.__name__}.{name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, patched)
    return crashed


def registering(table: str):
    """A `when` for crash_once on Catalog.add_partitions(self, table, partitions): called for `table`."""
    return lambda self, name, *args, **kwargs: name == table
