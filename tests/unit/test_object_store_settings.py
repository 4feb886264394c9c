"""A warehouse on S3: the [s3] section as loaded and validated, the s3a client's settings and the S3A committers
it becomes in session_conf (under the user's [spark.conf]), the stack's s3a jars, the shared metastore a remote
warehouse needs, and a file: URI warehouse being on the local disk. No JVM."""

from __future__ import annotations

import os
import re

import pytest

from lakecompact import config as config_module
from lakecompact import spark as spark_module
from lakecompact.config import S3Config, is_local, local_path
from lakecompact.errors import ConfigError

SECRET = "S3-Secret-4471"
SOURCE = {"kind": "files", "paths": ["/tmp/e/*.jsonl"]}
THRIFT = {"uri": "thrift://127.0.0.1:19083"}
COMMITTER_KEYS = (
    "spark.hadoop.fs.s3a.committer.name",
    "spark.hadoop.fs.s3a.committer.magic.enabled",
    "spark.sql.sources.commitProtocolClass",
    "spark.sql.parquet.output.committer.class",
    "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a",
)


@pytest.fixture(autouse=True)
def launched_by_lakecompact(tmp_path, monkeypatch):
    """No spark-defaults.conf of this machine, and no stack jars unless a test makes some."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-spark-conf"))
    monkeypatch.setattr(spark_module, "STACK_JARS", tmp_path / "no-stack-jars")


def lake(warehouse: str = "s3a://lake/warehouse", **sections) -> config_module.Config:
    raw = {"warehouse": warehouse, "source": SOURCE, **sections}
    if not is_local(warehouse) and "metastore" not in sections:
        raw["metastore"] = THRIFT
    return config_module.from_dict(raw)


def refused(**sections) -> str:
    with pytest.raises(ConfigError) as error:
        lake(**sections)
    return str(error.value)


# -- the [s3] section -------------------------------------------------------------------------------


def test_the_s3_section_is_optional_and_typed():
    assert lake().s3 is None
    s3 = lake(s3={"endpoint": "http://127.0.0.1:19030", "region": "us-east-1", "path_style_access": True,
                  "access_key": "lake", "secret_key": SECRET, "committer": "directory"}).s3
    assert s3 == S3Config(endpoint="http://127.0.0.1:19030", region="us-east-1", path_style_access=True,
                          access_key="lake", secret_key=SECRET, committer="directory")
    assert S3Config().committer == "magic" and not S3Config().path_style_access


def test_an_unknown_s3_key_names_the_close_one_not_its_value():
    message = refused(s3={"secret_kye": SECRET})
    assert message.startswith("s3.secret_kye: expected one of the keys endpoint, region, path_style_access, ")
    assert "did you mean 'secret_key'?" in message and SECRET not in message


@pytest.mark.parametrize("section, starts", [
    ({"path_style_access": "yes"}, "s3.path_style_access: expected true or false, got 'yes'"),
    ({"committer": "fast"}, "s3.committer: expected one of 'magic', 'directory', 'partitioned', got 'fast'"),
    ({"endpoint": "127.0.0.1:19030"}, "s3.endpoint: expected an http:// or https:// URL"),
    ({"endpoint": "http://[::1"}, "s3.endpoint: expected an http:// or https:// URL"),
    ({"region": 1}, "s3.region: expected a string, got 1"),
], ids=["bool", "committer", "endpoint-without-scheme", "endpoint-unparsable", "region"])
def test_a_wrong_s3_value_names_the_key_and_what_is_expected(section, starts):
    assert refused(s3=section).startswith(starts)


@pytest.mark.parametrize("section, starts", [
    ({"secret_key": SECRET}, "s3.secret_key: expected both s3.access_key and s3.secret_key, or neither"),
    ({"access_key": SECRET}, "s3.secret_key: expected both s3.access_key and s3.secret_key, or neither"),
    ({"session_token": SECRET}, "s3.access_key: expected s3.access_key and s3.secret_key with s3.session_token"),
    ({"secret_key": 4471}, "s3.secret_key: expected a string (the value is a secret: not shown)"),
    ({"endpoint": f"http://lake:{SECRET}@127.0.0.1:19030"}, ("s3.endpoint: expected an http:// or https:// URL "
                                                             "without a user or password")),
], ids=["secret-alone", "access-key-alone", "token-alone", "wrong-type", "password-in-endpoint"])
def test_an_s3_credential_refused_is_never_shown(section, starts):
    message = refused(s3=section)
    assert message.startswith(starts), message
    assert SECRET not in message and "4471" not in message


def test_an_s3_section_built_directly_is_validated_too():
    with pytest.raises(ConfigError, match="^s3.committer: expected one of magic, directory, partitioned"):
        S3Config(committer="fast")  # type: ignore[arg-type]


# -- its Spark settings -----------------------------------------------------------------------------


def test_the_s3_section_becomes_the_s3a_clients_settings():
    conf = spark_module.session_conf(lake(warehouse="/tmp/w", s3={
        "endpoint": "http://127.0.0.1:19030", "region": "us-east-1", "path_style_access": True,
        "access_key": "lake", "secret_key": SECRET, "session_token": "token-1"}))
    assert {k: v for k, v in conf.items() if k.startswith("spark.hadoop.fs.s3a.")} == {
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:19030",
        "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.access.key": "lake",
        "spark.hadoop.fs.s3a.secret.key": SECRET,
        "spark.hadoop.fs.s3a.session.token": "token-1",
        "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }
    # Spark hides them in its UI, logs and plans
    assert all(re.search(conf["spark.redaction.regex"], key) for key in (
        "spark.hadoop.fs.s3a.access.key", "spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.session.token"))


def test_aws_itself_needs_neither_an_endpoint_nor_keys():
    conf = spark_module.session_conf(lake(warehouse="/tmp/w", s3={"endpoint": "https://s3.eu-west-1.amazonaws.com"}))
    s3a = {k: v for k, v in conf.items() if k.startswith("spark.hadoop.fs.s3a.")}
    assert s3a == {"spark.hadoop.fs.s3a.endpoint": "https://s3.eu-west-1.amazonaws.com",
                   "spark.hadoop.fs.s3a.path.style.access": "false"}  # TLS and the default credential chain


def test_an_s3a_warehouse_gets_the_magic_committer_and_any_other_none():
    conf = spark_module.session_conf(lake())
    assert {k: conf[k] for k in COMMITTER_KEYS} == {
        "spark.hadoop.fs.s3a.committer.name": "magic",
        "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
        "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
        "spark.sql.parquet.output.committer.class": "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
        "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a": "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
    }
    directory = spark_module.session_conf(lake(s3={"committer": "directory"}))
    assert directory["spark.hadoop.fs.s3a.committer.name"] == "directory"
    assert "spark.hadoop.fs.s3a.committer.magic.enabled" not in directory
    for warehouse in ("/tmp/w", "file:///tmp/w", "hdfs://namenode:8020/lake", "s3://bucket/lake"):
        conf = spark_module.session_conf(lake(warehouse=warehouse, s3={"endpoint": "http://127.0.0.1:19030"}))
        assert not set(COMMITTER_KEYS) & set(conf), warehouse


def test_the_users_spark_conf_wins_over_the_s3_settings_and_committers():
    mine = {"spark.hadoop.fs.s3a.endpoint": "http://minio:9000", "spark.hadoop.fs.s3a.committer.name": "partitioned",
            "spark.sql.sources.commitProtocolClass": "com.example.Protocol"}
    conf = spark_module.session_conf(lake(s3={"endpoint": "http://127.0.0.1:19030"}, spark={"conf": mine}))
    assert {k: conf[k] for k in mine} == mine
    assert conf["spark.hadoop.fs.s3a.committer.magic.enabled"] == "true"  # what the user did not set stays


def test_the_stacks_s3a_jars_go_on_the_class_paths_when_a_location_is_on_s3a(tmp_path, monkeypatch):
    """On the class paths, not in spark.jars: Spark copies each of those to every executor (the SDK's is ~650 MB)."""
    stack = tmp_path / "stack-jars"
    for folder, jar in [("s3a", "hadoop-aws.jar"), ("s3a", "bundle.jar"), ("spark-kafka", "kafka.jar")]:
        (stack / folder).mkdir(parents=True, exist_ok=True)
        (stack / folder / jar).write_bytes(b"")
    monkeypatch.setattr(spark_module, "STACK_JARS", stack)
    s3a_jars = [str(stack / "s3a" / "bundle.jar"), str(stack / "s3a" / "hadoop-aws.jar")]

    def class_paths(config) -> list[list[str]]:
        conf = spark_module.session_conf(config)
        return [conf[f"spark.{side}.extraClassPath"].split(os.pathsep) for side in ("driver", "executor")]

    assert class_paths(lake()) == [s3a_jars, s3a_jars]
    assert "spark.jars" not in spark_module.session_conf(lake())
    from_s3a = lake(warehouse="/tmp/w", source={"kind": "files", "paths": ["/tmp/e", "s3a://events/*.jsonl"]})
    assert class_paths(from_s3a) == [s3a_jars, s3a_jars]
    kafka = lake(source={"kind": "kafka", "bootstrap_servers": "k:9092", "topics": ["t"]})
    assert spark_module.session_conf(kafka)["spark.jars"].split(",") == [str(stack / "spark-kafka" / "kafka.jar")]
    assert class_paths(kafka) == [s3a_jars, s3a_jars]
    for local in (lake(warehouse="/tmp/w"), lake(warehouse="hdfs://namenode/lake")):
        conf = spark_module.session_conf(local)
        assert "spark.jars" not in conf and "spark.driver.extraClassPath" not in conf
    packages = lake(spark={"conf": {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"}})
    assert "spark.driver.extraClassPath" not in spark_module.session_conf(packages)


# -- where the metastore can live -------------------------------------------------------------------


@pytest.mark.parametrize("warehouse", ["s3a://lake/warehouse", "hdfs://namenode:8020/lake", "gs://lake/w",
                                       "abfss://lake@account.dfs.core.windows.net/w"])
def test_a_remote_warehouse_without_a_shared_metastore_is_refused_when_loaded(warehouse, tmp_path):
    config = tmp_path / "lake.toml"
    config.write_text(f'warehouse = "{warehouse}"\n[source]\nkind = "files"\npaths = ["/tmp/e"]\n')
    with pytest.raises(ConfigError) as error:
        config_module.load(config)
    scheme = warehouse.split("://")[0]
    assert str(error.value) == (
        f'metastore: expected [metastore] uri = "thrift://host:port" (or jdbc_url = "jdbc:…") for a warehouse on '
        f"{scheme}:// (an embedded metastore lives on the local disk, not with the warehouse: Spark would create it "
        "in the working directory)")


@pytest.mark.parametrize("shared", [
    {"metastore": {"uri": "thrift://metastore:9083"}},
    {"metastore": {"jdbc_url": "jdbc:postgresql://db/metastore"}},
    {"spark": {"conf": {"spark.hadoop.hive.metastore.uris": "thrift://metastore:9083"}}},
    {"spark": {"conf": {"spark.hadoop.hive.metastore.client.factory.class": "com.amazonaws.glue.Factory"}}},
], ids=["thrift", "jdbc", "spark-conf-uris", "spark-conf-glue"])
def test_a_remote_warehouse_with_a_shared_metastore_loads(shared):
    config = config_module.from_dict({"warehouse": "s3a://lake/w", "source": SOURCE, **shared})
    assert spark_module.embedded_metastore(config) is None


def test_a_file_uri_warehouse_is_on_the_local_disk():
    for warehouse in ("/tmp/w", "file:/tmp/w", "file:///tmp/w"):
        config = lake(warehouse=warehouse)
        assert is_local(warehouse) and local_path(warehouse).as_posix() == "/tmp/w"
        assert spark_module.embedded_metastore(config).as_posix() == "/tmp/w/_metastore"
        conf = spark_module.session_conf(config)
        assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
            "jdbc:derby:;databaseName=/tmp/w/_metastore/metastore_db;create=true"), warehouse
        assert "-Dderby.stream.error.file=/tmp/w/_metastore/derby.log" in conf["spark.driver.extraJavaOptions"]
        assert conf["spark.sql.warehouse.dir"].startswith("file:") and conf["spark.sql.warehouse.dir"].endswith(
            "/tmp/w/_spark_warehouse")
    assert not any(map(is_local, ["s3a://b/w", "s3://b/w", "hdfs://nn/w", "gs://b/w", "abfs://c@a/w"]))


def test_a_file_uri_of_a_relative_path_is_refused():
    with pytest.raises(ConfigError, match="^warehouse: expected an absolute path or a URI"):
        lake(warehouse="file:tmp/w")


def test_under_spark_submit_the_jars_and_class_paths_are_spark_submits(tmp_path, monkeypatch):
    """spark-submit started the JVM with the user's --jars and class paths: the session's would replace them."""
    stack = tmp_path / "stack-jars"
    for folder in ("s3a", "spark-kafka"):
        (stack / folder).mkdir(parents=True)
        (stack / folder / "some.jar").write_bytes(b"")
    monkeypatch.setattr(spark_module, "STACK_JARS", stack)
    kafka = lake(source={"kind": "kafka", "bootstrap_servers": "k:9092", "topics": ["t"]})
    assert "spark.jars" in spark_module.session_conf(kafka)
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")
    conf = spark_module.session_conf(kafka)
    assert not {"spark.jars", "spark.driver.extraClassPath", "spark.executor.extraClassPath"} & set(conf)
