"""The Spark settings lakecompact gives a session: small-machine defaults on a local master only, and the user's
[spark.conf] over them."""

from __future__ import annotations

import pytest

from tests.support.configs import session_conf_of


def _conf(master: str, spark_conf: dict | None = None) -> dict[str, str]:
    return session_conf_of({"master": master, "conf": spark_conf or {}})


@pytest.fixture(autouse=True)
def no_gateway(monkeypatch):
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)  # a session of another launcher keeps its own settings


def test_a_local_master_gets_small_memory_pages_for_its_small_tasks():
    assert _conf("local[2]")["spark.buffer.pageSize"] == "2m"


def test_the_users_page_size_wins_and_a_cluster_keeps_sparks_own():
    assert _conf("local[2]", {"spark.buffer.pageSize": "16m"})["spark.buffer.pageSize"] == "16m"
    assert "spark.buffer.pageSize" not in _conf("yarn")
