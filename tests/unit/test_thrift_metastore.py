"""Waiting for a shared metastore, and naming it when it is gone (no Spark; real sockets)."""

from __future__ import annotations

import socket

import pytest

from lakecompact import config as config_module
from lakecompact.config import MetastoreConfig
from lakecompact.errors import ConfigError, MetastoreUnavailable
from lakecompact.thrift_metastore import addresses, as_outage, client_conf, wait_until_reachable
from tests.support.ports import closed_port


def test_a_listening_metastore_is_reached_at_once():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        slept = []
        wait_until_reachable(MetastoreConfig(uri=f"thrift://127.0.0.1:{closed_port()},thrift://127.0.0.1:{port}"),
                             sleep=slept.append)
        assert slept == []  # the first address refused, the second answered


def test_one_that_does_not_answer_is_retried_with_backoff_then_named_in_one_line(capsys):
    now = [0.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    uri = f"thrift://127.0.0.1:{closed_port()}"
    with pytest.raises(MetastoreUnavailable) as caught:
        wait_until_reachable(MetastoreConfig(uri=uri, connect_timeout_seconds=20), sleep=sleep, clock=lambda: now[0])
    assert slept[:5] == [0.5, 1.0, 2.0, 4.0, 5.0] and sum(slept) == 20
    message = str(caught.value)
    assert message.startswith(f"the Hive metastore {uri} did not answer within 20s; last: 127.0.0.1:")
    assert "refused" in message and "\n" not in message
    assert caught.value.exit_code == 6
    assert capsys.readouterr().err.count("does not answer") == 1  # said once, not per attempt


def test_spark_failures_that_say_the_metastore_is_gone_become_that_error():
    metastore = MetastoreConfig(uri="thrift://127.0.0.1:19083")
    java = RuntimeError("An error occurred while calling o31.sql.\n: org.apache.hadoop.hive.ql.metadata.HiveException: "
                        "org.apache.thrift.transport.TTransportException: java.net.SocketException: Broken pipe\n\tat ...")
    outage = as_outage(java, metastore)
    assert isinstance(outage, MetastoreUnavailable) and "thrift://127.0.0.1:19083" in str(outage)
    assert as_outage(RuntimeError("[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found."), metastore) is None
    assert as_outage(java, MetastoreConfig()) is None  # the embedded metastore is no service to wait for


def test_the_hive_client_retries_for_about_the_timeout():
    conf = client_conf(MetastoreConfig(uri="thrift://h:9083", connect_timeout_seconds=30))
    assert conf["spark.hadoop.hive.metastore.connect.retries"] == "15"
    assert conf["spark.hadoop.hive.metastore.client.connect.retry.delay"] == "2s"
    assert addresses("thrift://a:1,thrift://b") == [("a", 1), ("b", 9083)]


@pytest.mark.parametrize("metastore, key", [
    ({"uri": "http://h:9083"}, "metastore.uri"),
    ({"uri": "thrift://"}, "metastore.uri"),
    ({"uri": "thrift://h:9083", "connect_timeout_seconds": 0}, "metastore.connect_timeout_seconds"),
])
def test_a_wrong_metastore_setting_is_named(metastore, key):
    with pytest.raises(ConfigError, match=key):
        config_module.from_dict({"warehouse": "/tmp/w", "source": {"paths": ["/tmp/e"]}, "metastore": metastore})
