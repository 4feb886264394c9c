"""A failure of the s3a client is one line: its jars missing from Spark's class path (exit 2, naming the packages to
add), its endpoint not answering or refusing the credentials (exit 6, naming the endpoint, never the keys).

The messages below are Spark's and the s3a client's own, as real runs printed them. The tests at the end run real
`lakecompact` processes (a JVM each, so marked `spark`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from lakecompact import config as config_module
from lakecompact import spark as spark_module
from lakecompact.cli import Context
from lakecompact.errors import MetastoreUnavailable, MissingObjectStoreClient, ObjectStoreUnavailable
from tests.support.cli import lakecompact

ACCESS_KEY, SECRET_KEY = "Access-Key-8817", "Secret-Key-8817"
# the AWS SDK bundle's shaded SLF4J says this on stderr as it starts (aws/aws-sdk-java-v2#5312)
SDK_SLF4J_NOTICE = ('SLF4J: Failed to load class "org.slf4j.impl.StaticLoggerBinder".',
                    "SLF4J: Defaulting to no-operation (NOP) logger implementation",
                    "SLF4J: See http://www.slf4j.org/codes.html#StaticLoggerBinder for further details.")

NO_S3A_CLASS = ("An error occurred while calling o88.getFileSystem.\n: java.lang.RuntimeException: "
                "java.lang.ClassNotFoundException: Class org.apache.hadoop.fs.s3a.S3AFileSystem not found\n"
                "\tat org.apache.hadoop.conf.Configuration.getClass(Configuration.java:2737)\n")
NO_COMMIT_PROTOCOL = ("[INVALID_CONF_VALUE.REQUIREMENT] The value 'org.apache.spark.internal.io.cloud."
                      "PathOutputCommitProtocol' in the config \"spark.sql.sources.commitProtocolClass\" is invalid. "
                      "Class must be loadable and subclass of org.apache.spark.internal.io.FileCommitProtocol "
                      "SQLSTATE: 22022")
REFUSED_CONNECTION = (
    "An error occurred while calling o93.exists.\n: java.net.ConnectException: getFileStatus on s3a://lake/w/lake/"
    "_state/land: software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP request: Connect "
    "to 127.0.0.1:1 [/127.0.0.1] failed: Connection refused (SDK Attempt Count: 2):    software.amazon.awssdk.core."
    "exception.SdkClientException: Unable to execute HTTP request: Connect to 127.0.0.1:1 [/127.0.0.1] failed: "
    "Connection refused (SDK Attempt Count: 2): Connection refused\n"
    "\tat org.apache.hadoop.fs.s3a.impl.ErrorTranslation.maybeExtractIOException(ErrorTranslation.java:171)\n")
FORBIDDEN = (
    "An error occurred while calling o93.exists.\n: java.nio.file.AccessDeniedException: s3a://lake/w/lake/_state/"
    "land: getFileStatus on s3a://lake/w/lake/_state/land: software.amazon.awssdk.services.s3.model.S3Exception: "
    "Forbidden (Service: S3, Status Code: 403, Request ID: A85ED6C43FF5D473):null\n"
    "\tat org.apache.hadoop.fs.s3a.S3AUtils.translateException(S3AUtils.java:271)\n")
UNKNOWN_HOST = (
    ": java.net.UnknownHostException: getFileStatus on s3a://lake/w/lake/_state/land: software.amazon.awssdk.core."
    "exception.SdkClientException: Received an UnknownHostException when attempting to interact with a service.\n")


def s3_lake(warehouse: str = "s3a://lake/w", **s3) -> config_module.Config:
    return config_module.from_dict({
        "warehouse": warehouse, "source": {"kind": "files", "paths": ["/tmp/e"]},
        "metastore": {"uri": "thrift://127.0.0.1:19083"},
        "s3": {"endpoint": "http://127.0.0.1:1", "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, **s3},
    })


@pytest.mark.parametrize("text, missing", [
    (NO_S3A_CLASS, "ClassNotFoundException: org.apache.hadoop.fs.s3a.S3AFileSystem"),
    (NO_COMMIT_PROTOCOL, ("spark.sql.sources.commitProtocolClass = org.apache.spark.internal.io.cloud."
                         "PathOutputCommitProtocol: no such class")),
    ("java.lang.ClassNotFoundException: org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
     "ClassNotFoundException: org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter"),
    ("MetaException(message:java.lang.ClassNotFoundException Class org.apache.hadoop.fs.s3a.S3AFileSystem not found)",
     "ClassNotFoundException: org.apache.hadoop.fs.s3a.S3AFileSystem"),  # Hive's client
    ("java.lang.NoClassDefFoundError: software/amazon/awssdk/core/exception/SdkException",
     "NoClassDefFoundError: software/amazon/awssdk/core/exception/SdkException"),  # hadoop-aws without the SDK
    ('org.apache.hadoop.fs.UnsupportedFileSystemException: No FileSystem for scheme "s3a"',
     'No FileSystem for scheme "s3a"'),
], ids=["file-system", "commit-protocol", "parquet-committer", "hive-client", "aws-sdk", "no-scheme"])
def test_a_missing_s3a_client_is_a_config_mistake_naming_the_packages(text, missing, monkeypatch):
    monkeypatch.setattr(spark_module, "s3a_packages", lambda: "org.apache.hadoop:hadoop-aws:3.5.0,x:y:1")
    error = spark_module.as_object_store_error(RuntimeError(text), s3_lake())
    assert isinstance(error, MissingObjectStoreClient) and error.exit_code == 2
    assert str(error) == (
        f"the s3a client or Spark's S3A committers are not on Spark's class path ({missing}): expected their jars: "
        "spark-submit --packages org.apache.hadoop:hadoop-aws:3.5.0,x:y:1 --exclude-packages (spark-hadoop-cloud's "
        "own Hadoop client and other clouds), or the same in [spark.conf] \"spark.jars.packages\" and "
        '"spark.jars.excludes"; the exact lists, and the version to take when Maven Central lacks your Spark\'s: '
        'docs/production.md "Jars and their versions"')


def test_the_packages_named_are_those_of_this_spark_and_its_hadoop(tmp_path, monkeypatch):
    (tmp_path / "jars").mkdir()
    for jar in ("hadoop-client-api-3.4.1.jar", "spark-core_2.13-4.0.1.jar", "scala-library-2.13.16.jar"):
        (tmp_path / "jars" / jar).write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert spark_module.s3a_packages() == "org.apache.hadoop:hadoop-aws:3.4.1,org.apache.spark:spark-hadoop-cloud_2.13:4.0.1"


@pytest.mark.parametrize("text, problem, last", [
    (REFUSED_CONNECTION, "did not answer", ("java.net.ConnectException: getFileStatus on s3a://lake/w/lake/_state/land: "
     "software.amazon.awssdk.core.exception.SdkClientException: Unable to execute HTTP request: Connect to 127.0.0.1:1 "
     "[/127.0.0.1] failed: Connection refused")),
    (UNKNOWN_HOST, "did not answer", ("java.net.UnknownHostException: getFileStatus on s3a://lake/w/lake/_state/land: "
     "software.amazon.awssdk.core.exception.SdkClientException: Received an UnknownHostException when attempting to "
     "interact with a service.")),
    (FORBIDDEN, ("refused the credentials (s3.access_key, s3.secret_key, s3.session_token, or the s3a client's own "
     "credential chain)"), ("java.nio.file.AccessDeniedException: s3a://lake/w/lake/_state/land: getFileStatus on "
     "s3a://lake/w/lake/_state/land: software.amazon.awssdk.services.s3.model.S3Exception: Forbidden (Service: S3, "
     "Status Code: 403, Request ID: …")),
], ids=["connection-refused", "unknown-host", "forbidden"])
def test_an_s3_endpoint_gone_or_refusing_is_a_service_outage_naming_it(text, problem, last):
    error = spark_module.as_object_store_error(RuntimeError(text), s3_lake())
    assert isinstance(error, ObjectStoreUnavailable) and error.exit_code == 6
    assert str(error) == f"the S3 endpoint http://127.0.0.1:1 {problem}; last: {last}"
    assert ACCESS_KEY not in str(error) and SECRET_KEY not in str(error)


def test_the_endpoint_named_is_the_one_in_use_and_never_a_secret_in_the_message():
    forbidden = RuntimeError(FORBIDDEN.replace("Forbidden", f"Forbidden {SECRET_KEY}"))
    users = config_module.from_dict({
        "warehouse": "s3a://lake/w", "source": {"kind": "files", "paths": ["/tmp/e"]},
        "metastore": {"jdbc_url": "jdbc:derby:memory:m"},
        "spark": {"conf": {"spark.hadoop.fs.s3a.endpoint": "https://minio.example:9000/",
                           "spark.hadoop.fs.s3a.secret.key": SECRET_KEY}},
    })
    assert str(spark_module.as_object_store_error(forbidden, users)).startswith(
        "the S3 endpoint https://minio.example:9000 refused the credentials")
    assert SECRET_KEY not in str(spark_module.as_object_store_error(forbidden, users))
    aws = s3_lake(endpoint="", access_key="", secret_key="", region="eu-west-1")
    assert str(spark_module.as_object_store_error(RuntimeError(UNKNOWN_HOST), aws)).startswith(
        "the S3 endpoint of AWS (region eu-west-1) did not answer; last: java.net.UnknownHostException")


@pytest.mark.parametrize("text", [
    "org.apache.thrift.transport.TTransportException: java.net.ConnectException: Connection refused",
    "[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found.",
    "java.nio.file.AccessDeniedException: /tmp/w/lake/_state",  # the local disk's
], ids=["metastore", "query", "local-disk"])
def test_other_failures_are_no_s3_failure(text):
    assert spark_module.as_object_store_error(RuntimeError(text), s3_lake()) is None


def test_the_cli_names_a_refused_s3_endpoint_not_the_metastore_that_shares_its_sign():
    """"Connection refused" is one of the shared metastore's signs too."""
    context = Context(argparse.Namespace(config="lake.toml", command="status"))
    context.__dict__["config"] = s3_lake()
    assert isinstance(context.known_error(RuntimeError(REFUSED_CONNECTION)), ObjectStoreUnavailable)
    metastore_gone = RuntimeError("java.net.ConnectException: Connection refused (thrift://127.0.0.1:19083)")
    assert isinstance(context.known_error(metastore_gone), MetastoreUnavailable)


# -- real processes -----------------------------------------------------------------------------------


def s3a_config(tmp_path: Path, endpoint: str, spark_conf: str) -> Path:
    """An s3a:// warehouse whose metastore is a Derby database in tmp_path, reached by JDBC (no service)."""
    config = tmp_path / "lake.toml"
    config.write_text(
        'warehouse = "s3a://nosuchbucket/x"\n'
        "[source]\n"
        'kind = "files"\n'
        f'paths = ["{tmp_path}/events/*.jsonl"]\n'
        "[metastore]\n"
        f'jdbc_url = "jdbc:derby:;databaseName={tmp_path / "metastore_db"};create=true"\n'
        "[s3]\n"
        f'endpoint = "{endpoint}"\n'
        f'access_key = "{ACCESS_KEY}"\n'
        f'secret_key = "{SECRET_KEY}"\n'
        "[spark.conf]\n"
        f"{spark_conf}"
    )
    return config


def said(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line not in SDK_SLF4J_NOTICE]


@pytest.mark.spark
def test_an_s3a_warehouse_without_the_s3a_jars_is_one_line_exit_2(tmp_path):
    # the user's own class path, none of s3a
    config = s3a_config(tmp_path, "http://127.0.0.1:1", '"spark.driver.extraClassPath" = ""\n'
                        '"spark.executor.extraClassPath" = ""\n')
    result = lakecompact(config, "status")
    assert result.returncode == 2, result.stderr
    [line] = said(result.stderr)
    assert line.startswith("lakecompact: error: the s3a client or Spark's S3A committers are not on Spark's class "
                           "path (ClassNotFoundException: org.apache.hadoop.fs.s3a.S3AFileSystem): expected their jars: "
                           "spark-submit --packages org.apache.hadoop:hadoop-aws:"), line
    assert ",org.apache.spark:spark-hadoop-cloud_2.13:" in line
    assert ACCESS_KEY not in result.stderr + result.stdout and SECRET_KEY not in result.stderr + result.stdout


@pytest.mark.spark
def test_the_s3a_committers_without_their_jar_are_one_line_exit_2(tmp_path):
    """Spark refuses a commit protocol it cannot load as it reads its settings, before any query."""
    config = tmp_path / "lake.toml"
    config.write_text(
        f'warehouse = "file://{tmp_path}/warehouse"\n'
        f'[source]\nkind = "files"\npaths = ["{tmp_path}/events/*.jsonl"]\n'
        '[spark.conf]\n"spark.sql.sources.commitProtocolClass" = '
        '"org.apache.spark.internal.io.cloud.PathOutputCommitProtocol"\n'
    )
    result = lakecompact(config, "sql", "SELECT 1")
    assert result.returncode == 2, result.stderr
    [line] = said(result.stderr)
    assert line.startswith("lakecompact: error: the s3a client or Spark's S3A committers are not on Spark's class "
                           "path (spark.sql.sources.commitProtocolClass = org.apache.spark.internal.io.cloud."
                           "PathOutputCommitProtocol: no such class)"), line
    # a file: URI warehouse is local: its embedded metastore is under it, not in the working directory
    assert (tmp_path / "warehouse" / "_metastore").is_dir()


@pytest.mark.spark
@pytest.mark.skipif(not any((spark_module.STACK_JARS / "s3a").glob("*.jar")),
                    reason="needs the stack's s3a jars (scripts/stack/install.sh)")
def test_an_s3_endpoint_that_does_not_answer_is_one_line_exit_6(tmp_path):
    # the s3a client's retries (minutes) cut to one attempt
    fast = '"spark.hadoop.fs.s3a.attempts.maximum" = "1"\n"spark.hadoop.fs.s3a.retry.limit" = "0"\n'
    result = lakecompact(s3a_config(tmp_path, "http://127.0.0.1:1", fast), "status")
    assert result.returncode == 6, result.stderr
    [line] = said(result.stderr)
    # the first request is a probe or a listing, as the state file's read makes it
    assert re.match(r"lakecompact: error: the S3 endpoint http://127\.0\.0\.1:1 did not answer; last: "
                    r"java\.net\.ConnectException: (getFileStatus|listObjects\(\)) on s3a://nosuchbucket/x/lake/",
                    line), line
    assert line.endswith("Connection refused"), line
    assert ACCESS_KEY not in result.stderr + result.stdout and SECRET_KEY not in result.stderr + result.stdout
