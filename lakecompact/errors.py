"""The one exception root of lakecompact, and the errors a user can meet."""

from __future__ import annotations


class LakecompactError(Exception):
    """Root of every error lakecompact raises on purpose; the CLI prints these without a traceback."""


class ConfigError(LakecompactError):
    def __init__(self, key: str, expected: str, got: object = None, *, hint: str = ""):
        self.key, self.expected, self.got = key, expected, got
        message = f"{key}: expected {expected}"
        if got is not None:
            message += f", got {got!r}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


class SchemaError(LakecompactError):
    """A source schema that cannot be mapped or evolved safely."""


class IncompatibleSchemaChange(SchemaError):
    def __init__(self, table: str, column: str, old_type: str, new_type: str):
        self.table, self.column, self.old_type, self.new_type = table, column, old_type, new_type
        super().__init__(
            f"table {table}: column {column} changed from {old_type} to {new_type}, which is not a safe "
            f"widening; the table is stopped and its events wait in increments/quarantine until a person decides"
        )


class LockHeld(LakecompactError):
    def __init__(self, subject: str, path: str, owner: str):
        self.subject, self.path, self.owner = subject, path, owner
        super().__init__(f"{subject} by another job ({owner}); if that job is gone, remove the lock file {path}")


class UnknownTable(LakecompactError):
    def __init__(self, table: str, known: list[str]):
        import difflib

        self.table, self.known = table, known
        close = difflib.get_close_matches(table, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known tables: {', '.join(known) or 'none'}"
        super().__init__(f"unknown table {table!r}{hint}")


class RollbackError(LakecompactError):
    """A rollback that cannot be done (no earlier version kept)."""
