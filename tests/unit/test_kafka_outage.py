"""Waiting for Kafka brokers, and naming them when they are gone (no Spark; real sockets). The real broker
stopped under `land` is tests/e2e/test_source_outages.py."""

from __future__ import annotations

import pytest

from lakecompact import config as config_module
from lakecompact.config import SourceConfig
from lakecompact.errors import ConfigError, KafkaUnavailable
from lakecompact.landing.kafka import as_outage, broker_addresses, wait_for_brokers
from tests.support.ports import closed_port


def test_bootstrap_servers_are_read_as_kafka_writes_them():
    assert broker_addresses("a:1, PLAINTEXT://b:2,[::1]:3,c") == [("a", 1), ("b", 2), ("::1", 3), ("c", 9092)]


def test_brokers_that_do_not_answer_are_named_after_the_timeout(capsys):
    servers = f"127.0.0.1:{closed_port()}"
    with pytest.raises(KafkaUnavailable) as caught:
        wait_for_brokers(SourceConfig(kind="kafka", bootstrap_servers=servers, topics=("t",), connect_timeout_seconds=1))
    assert str(caught.value).startswith(f"the Kafka brokers {servers} did not answer within 1s; last: {servers}: ")
    assert caught.value.exit_code == 6
    assert capsys.readouterr().err.count("do not answer") == 1  # said once, while it waits


def test_a_timeout_of_the_kafka_client_is_an_outage_of_a_kafka_source_only():
    kafka = SourceConfig(kind="kafka", bootstrap_servers="k:9092", topics=("t",), connect_timeout_seconds=5)
    error = RuntimeError("py4j ... org.apache.kafka.common.errors.TimeoutException: Timeout of 5000ms expired")
    outage = as_outage(error, kafka)
    assert str(outage) == ("the Kafka brokers k:9092 did not answer within 5s; last: the Kafka client: "
                           "org.apache.kafka.common.errors.TimeoutException")
    assert as_outage(error, SourceConfig(paths=("/e",))) is None
    assert as_outage(RuntimeError("AnalysisException: no such column"), kafka) is None


def test_the_timeout_is_a_setting_checked_when_loaded():
    source = {"kind": "kafka", "bootstrap_servers": "k:9092", "topics": ["t"]}
    assert config_module.from_dict({"warehouse": "/w", "source": source}).source.connect_timeout_seconds == 120
    with pytest.raises(ConfigError, match="source.connect_timeout_seconds"):
        config_module.from_dict({"warehouse": "/w", "source": {**source, "connect_timeout_seconds": 0}})
