"""The one exception root of lakecompact, and the errors a user can meet."""

from __future__ import annotations


class LakecompactError(Exception):
    """Root of every error lakecompact raises on purpose; the CLI prints these without a traceback."""

    exit_code = 2  # the CLI's exit status for this error


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
    """Another job holds the lock: for a scheduled job that is no failure (exit status 0)."""

    exit_code = 0

    def __init__(self, subject: str, path: str, owner: str):
        self.subject, self.path, self.owner = subject, path, owner
        super().__init__(f"{subject} by another job ({owner}); if that job is gone, remove the lock file {path}")


class MetastoreBusy(LakecompactError):
    """Another process holds the embedded metastore, and this one was told not to wait."""

    exit_code = 3

    def __init__(self, metastore: str, holder: str):
        self.metastore, self.holder = metastore, holder
        super().__init__(
            f"the embedded metastore {metastore} is in use by {holder}; run again when it is done, or use a "
            f"shared metastore ([metastore] uri) for jobs side by side"
        )


class JvmStartFailed(LakecompactError):
    """The Spark driver's JVM did not start (an option it refuses, too little memory, no Java)."""


class ServiceUnavailable(LakecompactError):
    """A service lakecompact needs did not answer within the time allowed; rerun once it is back."""

    exit_code = 6


class MetastoreUnavailable(ServiceUnavailable):
    def __init__(self, uri: str, seconds: float, last: str):
        self.uri, self.seconds, self.last = uri, seconds, last
        super().__init__(f"the Hive metastore {uri} did not answer within {seconds:.0f}s; last: {last}")


class ObjectStoreUnavailable(ServiceUnavailable):
    """The S3 endpoint did not answer, or refused the credentials (named by their keys, never their values)."""

    def __init__(self, endpoint: str, problem: str, last: str):
        self.endpoint, self.problem, self.last = endpoint, problem, last
        super().__init__(f"the S3 endpoint {endpoint} {problem}; last: {last}")


class MissingObjectStoreClient(LakecompactError):
    """The s3a client (hadoop-aws and the AWS SDK) or Spark's S3A committers (spark-hadoop-cloud) are not on Spark's
    class path."""

    def __init__(self, missing: str, packages: str):
        self.missing, self.packages = missing, packages
        super().__init__(
            f"the s3a client or Spark's S3A committers are not on Spark's class path ({missing}): expected their jars: "
            f"spark-submit --packages {packages} --exclude-packages (spark-hadoop-cloud's own Hadoop client and "
            "other clouds), or the same in [spark.conf] \"spark.jars.packages\" and \"spark.jars.excludes\"; the "
            "exact lists, and the version to take when Maven Central lacks your Spark's: docs/production.md \"Jars "
            "and their versions\"")


class UnknownTable(LakecompactError):
    def __init__(self, table: str, known: list[str]):
        import difflib

        self.table, self.known = table, known
        close = difflib.get_close_matches(table, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known tables: {', '.join(known) or 'none'}"
        super().__init__(f"unknown table {table!r}{hint}")


class MissingFile(LakecompactError):
    """A file or folder that Spark was to read is gone: deleted outside lakecompact, or while it ran."""

    exit_code = 7


class MissingIncrement(MissingFile):
    """A landed batch that the metastore registers, its folder gone (deleted outside lakecompact)."""


# Spark's error conditions for a path that is not there (when a read is planned, and when a task opens a file), as its
# messages name them: a task's error reaches Python as a Py4JJavaError, which has no condition of its own
_MISSING_FILE_CONDITIONS = ("[PATH_NOT_FOUND]", "[FAILED_READ_FILE.FILE_NOT_EXIST]")


def as_missing_file(error: BaseException, command: str) -> MissingFile | None:
    """The one-line error for a Spark error that says a file or folder is gone (None: another error)."""
    for line in str(error).splitlines():
        found = [line.index(condition) for condition in _MISSING_FILE_CONDITIONS if condition in line]
        if found:
            return MissingFile(f"{command}: a file or folder it was to read is gone (deleted outside lakecompact, or "
                               f"while it ran): {line[min(found):].strip()}")
    return None


class RollbackError(LakecompactError):
    """A rollback that cannot be done (no earlier version kept)."""


class QueryError(LakecompactError):
    """A query Spark refused: bad syntax, an unknown table or column."""

    exit_code = 4

    def __init__(self, message: str):
        # Spark's first line names the error class and what was wrong; the rest repeats the query
        self.spark_message = message
        super().__init__(f"sql: {message.strip().splitlines()[0] if message.strip() else 'the query failed'}")


class InputFileError(LakecompactError):
    """A file named on the command line that is missing or not what it should be."""

    exit_code = 5

    def __init__(self, option: str, path: str, expected: str, problem: str):
        self.option, self.path = option, path
        super().__init__(f"{option} {path}: expected {expected}; {problem}")


class KafkaUnavailable(ServiceUnavailable):
    def __init__(self, servers: str, seconds: float, last: str):
        self.servers, self.seconds, self.last = servers, seconds, last
        super().__init__(f"the Kafka brokers {servers} did not answer within {seconds:.0f}s; last: {last}")


class LakeFormatTooNew(LakecompactError):
    """A table written by a newer lakecompact, in a lake format this version cannot read (docs/design.md "State
    files"): nothing of it is read or changed."""

    exit_code = 8

    def __init__(self, table: str, found: int, readable: int):
        self.table, self.found, self.readable = table, found, readable
        super().__init__(
            f"table {table} is in lake format {found}, written by a newer lakecompact; this version reads format "
            f"{readable} and older: run the lakecompact that wrote it, or a newer one"
        )
