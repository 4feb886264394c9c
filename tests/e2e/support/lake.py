"""lakecompact run in-process, in the e2e session: a lake's config, land and compact (timed, and checked for
quarantined events)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tests.e2e.support.common import say


def lake_config(stack, warehouse: Path, database: str, topics: list[str] | None = None, *,
                topic_pattern: str = "", defaults: dict | None = None, tables: dict | None = None, **source: Any):
    from lakecompact import config as config_module

    return config_module.from_dict({
        "warehouse": str(warehouse),
        "database": database,
        "source": {
            "kind": "kafka",
            "bootstrap_servers": stack.KAFKA_BOOTSTRAP,
            **({"topics": topics} if topics else {}),
            **({"topic_pattern": topic_pattern} if topic_pattern else {}),
            **source,
        },
        "defaults": {"buckets": 2, **(defaults or {})},
        "tables": tables or {},
    })


def check_session(spark, e2e_spark):
    """The session the tests run lakecompact in, in-process: `e2e_spark`, a session of the suite's one
    SparkContext (tests/conftest.py `spark`, created first: Hive catalog, Kafka jars) with the e2e settings."""
    assert spark is e2e_spark or spark.sparkContext is e2e_spark.sparkContext, "two Spark contexts"
    implementation = e2e_spark.conf.get("spark.sql.catalogImplementation")
    assert implementation == "hive", (
        f"the session's catalog is {implementation!r}: lakecompact needs Hive support (e2e_spark was created "
        "before the `spark` fixture of tests/conftest.py)"
    )
    return e2e_spark


def jvm_cpu_seconds(spark) -> float:
    """CPU time the session's JVM used so far (less dependent on other load than wall time)."""
    try:
        proc = spark.sparkContext._gateway.proc
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # noqa: BLE001 - only for the printed timings
        return 0.0


def land(spark, config):
    from lakecompact.landing.land import land as land_

    started, cpu = time.monotonic(), jvm_cpu_seconds(spark)
    report = land_(spark, config)
    say(f"land: batch {report.batch}, {report.events_in} events in, rows out {report.rows_out}, "
        f"quarantined {report.quarantined}, {time.monotonic() - started:.1f}s "
        f"({jvm_cpu_seconds(spark) - cpu:.1f}s JVM CPU)")
    assert not report.quarantined, f"events were quarantined: {report.quarantined}"
    return report


def compact(spark, config):
    from lakecompact.compaction.compact import compact as compact_

    started, cpu = time.monotonic(), jvm_cpu_seconds(spark)
    reports = compact_(spark, config)
    say(f"compact: {time.monotonic() - started:.1f}s ({jvm_cpu_seconds(spark) - cpu:.1f}s JVM CPU)")
    return reports
