"""`session_conf`, split by concern, gives every setting it gave as one function: the settings of a few configs
against what the one function gave (session_conf_golden.json, written by it), in a fixed environment (no
spark-defaults.conf but the case's, 2 cores, fixed jar paths, a given class archive). The package's own folder,
wherever the clone is, reads as {PACKAGE}."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import lakecompact
from lakecompact import config as config_module
from lakecompact import spark as spark_module

ARCHIVE = ("-XX:SharedArchiveFile=/archive/lakecompact.jsa", "-Xshare:auto")
CASES = {
    "local-files-one-shot": (
        {"warehouse": "/lakes/w", "source": {"kind": "files", "paths": ["/events/*.jsonl"]},
         "spark": {"master": "local[2]"}},
        {}, {"one_shot": True},
    ),
    "thrift-kafka-user-options": (
        {"warehouse": "/lakes/w", "database": "shop",
         "source": {"kind": "kafka", "bootstrap_servers": "k:9092", "topics": ["a.b.c"]},
         "metastore": {"uri": "thrift://m1:9083,thrift://m2:9083", "connect_timeout_seconds": 30},
         "spark": {"master": "local[*]", "conf": {"spark.driver.extraJavaOptions": "-XX:+UseG1GC -Dx=1",
                                                  "spark.sql.shuffle.partitions": "3"}}},
        {"spark.driver.extraJavaOptions": "-Dsite=1", "spark.jars": "/site/a.jar"}, {},
    ),
    "jdbc-s3a-cluster-verbose": (
        {"warehouse": "s3a://bucket/lake", "source": {"kind": "files", "paths": ["s3a://bucket/events/*"]},
         "metastore": {"jdbc_url": "jdbc:postgresql://db/hive", "jdbc_driver": "org.postgresql.Driver",
                       "jdbc_user": "hive", "jdbc_password": "pw"},
         "s3": {"endpoint": "http://minio:9000", "region": "us-east-1", "path_style_access": True,
                "access_key": "ak", "secret_key": "sk", "session_token": "st", "committer": "directory"},
         "spark": {"master": "spark://host:7077"}},
        {"spark.driver.extraClassPath": "/site/cp.jar"}, {"verbose": True},
    ),
    "s3a-thrift-local-packages": (
        {"warehouse": "s3a://bucket/lake", "source": {"kind": "kafka", "bootstrap_servers": "k:9092",
                                                      "topic_pattern": "a\\..*"},
         "metastore": {"uri": "thrift://m:9083"},
         "spark": {"master": "local[4]", "conf": {"spark.jars.packages": "x:y:1"}}},
        {}, {"one_shot": True},
    ),
}


def case_conf(name: str, monkeypatch) -> dict[str, str]:
    raw, site, options = CASES[name]
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(spark_module, "spark_defaults", lambda: dict(site))
    monkeypatch.setattr(spark_module, "STACK_JARS", Path("/no-stack-jars"))
    monkeypatch.setattr(spark_module, "_stack_jars", lambda config, folders: [] if "spark.jars.packages" in
                        config.spark.conf else [f"/stack/{folder}/{folder}.jar" for folder in folders])
    return spark_module.session_conf(config_module.from_dict(raw), archive_options=ARCHIVE, **options)


PACKAGE = str(Path(lakecompact.__file__).resolve().parent)
GOLDEN = json.loads((Path(__file__).parent / "session_conf_golden.json").read_text().replace("{PACKAGE}", PACKAGE))


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_settings_of_a_config_are_what_they_were(name, monkeypatch):
    assert case_conf(name, monkeypatch) == GOLDEN[name]
