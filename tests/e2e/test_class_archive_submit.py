"""The class archive under spark-submit (docs/production.md "The class archive under spark-submit"): the option
`lakecompact class-archive` prints, given to spark-submit on the stack's cluster with the warehouse on its S3, maps
the archive into the driver's JVM, as the JVM's own class-loading log says, and the compaction that driver runs
leaves the right rows in the views.

Client mode only: the stack's standalone cluster would start a cluster-mode driver on a worker, which has neither
the archive nor Python. The driver gets the s3a jars by SPARK_DIST_CLASSPATH, after Spark's jars: by
--driver-class-path, before them, its JVM would start without the archive.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest

from tests.e2e import support
from tests.e2e.support import cluster
from tests.support.cli import ROOT, process_env

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

# how -Xlog:class+load names a class mapped from the archive given by -XX:SharedArchiveFile (the JDK's own, which
# every JVM maps, is "shared objects file" alone)
FROM_ARCHIVE = "source: shared objects file (top)"
# a class every compaction's write loads, and the archive's workload (the demo) did too
WRITER = "org.apache.spark.sql.execution.datasources.FileFormatWriter$"


def printed_option() -> list[str]:
    """The option `lakecompact class-archive` prints for spark-submit (it builds the archive when there is none)."""
    built = subprocess.run([sys.executable, "-m", "lakecompact", "class-archive"], cwd=ROOT, env=process_env(),
                           capture_output=True, text=True, check=False, timeout=1200)
    assert built.returncode == 0, built.stdout + built.stderr
    option = shlex.split(built.stdout.splitlines()[-1])
    assert option[0] == "--driver-java-options" and option[1].startswith("-XX:SharedArchiveFile="), built.stdout
    return option


def test_a_compaction_by_spark_submit_maps_the_printed_class_archive(st, tmp_path):
    flag, archive = printed_option()
    classes = tmp_path / "compact-classes.log"
    run, database = support.unique("archive"), support.unique("archive")
    config = cluster.s3_lake_toml(st, tmp_path / "lake.toml", run, database,
                                  events=ROOT / "examples" / "events" / "part-1.jsonl")

    def submit(name: str, *args: str, log: str = "") -> cluster.Job:
        # the driver's other options in the one --driver-java-options spark-submit keeps
        # one executor: the archive is the driver's, and a second executor JVM would only slow the four drivers
        command = [*st.spark_submit_command(driver_class_path=False, cores=1,
                                            conf={"spark.executor.extraJavaOptions": cluster.C1_ONLY}),
                   flag, f"{archive} {cluster.C1_ONLY} {log}".strip(), str(cluster.MAIN), "--config", str(config), *args]
        return cluster.start(tmp_path, name, command, args, SPARK_DIST_CLASSPATH=":".join(st.s3a_jars()),
                             PYTHONPATH=str(ROOT)).finish(timeout=900)

    with cluster.metastore_reading_s3(st):
        try:
            submit("land", "land")
            compacted = submit("compact", "compact", log=f"-Xlog:class+load=info:file={classes}")
            read = submit("sql", "sql", cluster.demo_part_1_query(database))
        finally:
            try:
                submit("drop", "sql", f"DROP DATABASE IF EXISTS `{database}` CASCADE")
            finally:
                cluster.delete_objects(st, f"{run}/")

    assert re.search(r"^compact public_customers: base v0 -> v1:", compacted.stdout, re.MULTILINE), compacted.tail()
    assert cluster.demo_part_1_rows(read) == cluster.DEMO_PART_1, read.tail()
    loaded = [line for line in classes.read_text().splitlines() if " source: " in line]
    mapped = [line for line in loaded if line.endswith(FROM_ARCHIVE)]
    # ~14,500 of the compaction's ~28,600 classes: the others are made as it runs (lambdas, generated code), come
    # from jars the archive lacks (the s3a client's; signed ones, which the JVM does not archive) or the JDK's own
    assert len(mapped) > 10_000, f"{len(mapped)} of {len(loaded)} classes from the archive"
    assert f"{WRITER} {FROM_ARCHIVE}" in {line.split("] ", 1)[1] for line in mapped}
    assert "Unable to use shared archive" not in compacted.stdout + compacted.stderr
