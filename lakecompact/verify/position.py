"""Where the source database's log is now, as the lake's `__position` counts it: the PostgreSQL WAL LSN, or the
MySQL/MariaDB binlog file and offset. verify reads it before and after it reads a table, to tell a change still in
flight from a difference (docs/design.md "Verify")."""

from __future__ import annotations

import re
from dataclasses import dataclass

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from lakecompact import sql
from lakecompact.config import VerifyConfig
from lakecompact.errors import LakecompactError
from lakecompact.verify import source

TEMPLATE = "source_log_position.sql.j2"



@dataclass(frozen=True)
class Position:
    """A point of the source's log: `value` compares with the lake's `__position`, `text` as the database says it."""

    value: int
    text: str


def from_lsn(text: str) -> Position:
    """PostgreSQL's `16/B374D848`: the high and low 32 bits of the LSN, in hex."""
    high, low = text.split("/")
    return Position((int(high, 16) << 32) + int(low, 16), text)


def from_binlog(file: str, offset: int) -> Position:
    """A binlog file and offset as decode.py's `__position` packs a binlog event's: the file's number in 8 digits,
    the offset in 20, the row in 10 (a position between events: row 0)."""
    number = re.search(r"([0-9]+)$", file)
    if number is None:
        raise LakecompactError(f"verify: expected a binlog file name ending in its number, got {file!r}")
    return Position(int(f"{int(number.group(1)):08d}{offset:020d}{0:010d}"), f"{file}:{offset}")


def current(spark: SparkSession, verify: VerifyConfig) -> Position:
    """The source's log position now, over a JDBC connection of the driver process (one row: no Spark job)."""
    connection = source.connection(spark, verify)
    try:
        if verify.jdbc_kind == "postgresql":
            rows = _rows(connection, sql.render(TEMPLATE, kind="postgresql"))
            return from_lsn(rows[0][0])
        rows, refused = [], None
        for binary_log_status in (False, True):
            try:
                rows = _rows(connection, sql.render(TEMPLATE, kind="binlog", binary_log_status=binary_log_status))
                break
            except Py4JJavaError as error:  # the first's, unless the server does not know that statement
                refused = error if refused is None or "syntax" in source.root_cause(refused).lower() else refused
        else:
            raise source.unreadable("verify: reading the binlog position (SHOW MASTER STATUS needs the REPLICATION "
                                    "CLIENT or BINLOG MONITOR privilege; or set settle_seconds = 0)", refused)
        if not rows:
            raise LakecompactError("verify: the source database has no binary log (SHOW MASTER STATUS is empty); "
                                   "expected the binlog Debezium reads, or settle_seconds = 0")
        return from_binlog(rows[0][0], int(rows[0][1]))
    except Py4JJavaError as error:
        raise source.unreadable(f"verify: reading the log position of {source.url(verify)}", error) from None
    finally:
        connection.close()


def _rows(connection, query: str) -> list[tuple[str, ...]]:
    """The first two columns of each row, as text."""
    statement = connection.createStatement()
    try:
        result = statement.executeQuery(query)
        width = min(2, result.getMetaData().getColumnCount())
        rows = []
        while result.next():
            rows.append(tuple(result.getString(i + 1) for i in range(width)))
        return rows
    finally:
        statement.close()
