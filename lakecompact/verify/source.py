"""The source database as Spark's JDBC source reads it: the connection's options, the table a lake table came from,
and the key ranges read side by side."""

from __future__ import annotations

import os

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakecompact.config import TableConfig, VerifyConfig
from lakecompact.errors import LakecompactError, ServiceUnavailable
from lakecompact.lake.model import TableSchema

# The driver each URL scheme needs. A jdbc:mariadb URL is read as jdbc:mysql with the MariaDB driver's
# permitMysqlScheme: Spark picks its SQL dialect (quoting names with backquotes) by the jdbc:mysql prefix only.
DRIVERS = {"postgresql": "org.postgresql.Driver", "mysql": "com.mysql.cj.jdbc.Driver",
           "mariadb": "org.mariadb.jdbc.Driver"}
# Timestamps as the lake holds them: in UTC (a TIMESTAMP column of MySQL/MariaDB is read in the session's zone).
SESSION_INIT = {"postgresql": "SET TIME ZONE 'UTC'", "mysql": "SET time_zone = '+00:00'",
                "mariadb": "SET time_zone = '+00:00'"}


class SourceUnreachable(ServiceUnavailable):
    """The source database did not answer."""


# what the drivers say when no connection could be made (PostgreSQL's, MariaDB's, MySQL's)
_UNREACHABLE = ("Connection refused", "Connection to ", "Could not connect", "Socket fail", "Communications link failure",
                "UnknownHostException", "connect timed out")


def root_cause(error: BaseException) -> str:
    """What the driver said: the innermost JVM exception under Spark's (whose own message hides it)."""
    java = getattr(error, "_origin", None) or getattr(error, "java_exception", None)
    if java is None:
        return str(error)
    while java.getCause() is not None:
        java = java.getCause()
    return java.toString()


def unreadable(what: str, error: BaseException) -> LakecompactError:
    """The one-line error for a read of the source that failed: the database unreachable (exit 6), or what it
    refused (a missing table, a wrong password: exit 2)."""
    text = root_cause(error).strip()
    reason = (text.splitlines() or ["no reason given"])[0].split("Exception: ", 1)[-1]
    if any(sign in text for sign in _UNREACHABLE):
        return SourceUnreachable(f"{what}: the database did not answer: {reason}")
    return LakecompactError(f"{what}: {reason}")


def url(verify: VerifyConfig) -> str:
    if verify.jdbc_kind != "mariadb":
        return verify.jdbc_url
    rest = verify.jdbc_url[len("jdbc:mariadb:"):]
    return "jdbc:mysql:" + rest + ("&" if "?" in rest else "?") + "permitMysqlScheme"


def options(verify: VerifyConfig) -> dict[str, str]:
    """The JDBC source's options every read of the source takes (the password among them: never printed)."""
    if verify.password_env and verify.password_env not in os.environ:
        raise LakecompactError(f"verify.password_env: expected the environment variable {verify.password_env} to "
                               "hold the source database's password; it is not set")
    password = os.environ[verify.password_env] if verify.password_env else verify.password
    return {
        "url": url(verify), "driver": DRIVERS[verify.jdbc_kind], "user": verify.user, "password": password,
        "fetchsize": str(verify.fetch_size), "sessionInitStatement": SESSION_INIT[verify.jdbc_kind],
        # a timestamp without time zone is a wall-clock time, as Debezium sends it (docs/design.md "Verify")
        "preferTimestampNTZ": "true",
    }


def source_table(schema: TableSchema, table: TableConfig) -> str:
    """The source table a lake table came from: [tables.<t>] source_table, else the topic's last two parts
    (<prefix>.<schema>.<table> for PostgreSQL, <prefix>.<database>.<table> for MySQL and MariaDB)."""
    return table.source_table or ".".join(schema.topic.split(".")[-2:])


def quoted(name: str, kind: str) -> str:
    mark = '"' if kind == "postgresql" else "`"
    return ".".join(f"{mark}{part}{mark}" for part in name.split("."))


def read(spark: SparkSession, verify: VerifyConfig, name: str, ranged_by: str | None) -> DataFrame:
    """The source table; in `read_partitions` ranges of `ranged_by` (a whole-number key column) when given."""
    base = {**options(verify), "dbtable": quoted(name, verify.jdbc_kind)}
    reader = spark.read.format("jdbc").options(**base)
    if ranged_by is None or verify.read_partitions == 1:
        return reader.load()
    # the database computes them: Spark pushes the aggregate down to it
    bounds = (spark.read.format("jdbc").options(**base).option("pushDownAggregate", "true").load()
              .agg(F.min(ranged_by).alias("low"), F.max(ranged_by).alias("high")).first())  # one row
    if bounds is None or bounds["low"] is None or bounds["low"] == bounds["high"]:
        return reader.load()
    return reader.options(partitionColumn=ranged_by, lowerBound=str(bounds["low"]), upperBound=str(bounds["high"]),
                          numPartitions=str(verify.read_partitions)).load()


def connection(spark: SparkSession, verify: VerifyConfig):
    """A plain JDBC connection of the driver process, for a statement that is not a Spark read (close it)."""
    jvm = spark.sparkContext._jvm
    settings = options(verify)
    # Spark's registry wraps the driver, loaded from spark.jars, so that java.sql.DriverManager can hand it out
    jvm.org.apache.spark.sql.execution.datasources.jdbc.DriverRegistry.register(settings["driver"])
    properties = jvm.java.util.Properties()
    for name in ("user", "password"):
        properties.setProperty(name, settings[name])
    try:
        return jvm.java.sql.DriverManager.getConnection(settings["url"], properties)
    except Py4JJavaError as error:
        raise unreadable(f"verify: connecting to {url(verify)}", error) from None
