"""The JVM class archive: built from a real JVM's dump, put in place only when a JVM can map it, and then handed
to every Spark driver JVM; a damaged one is never used (a JVM given one aborts)."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest

from lakecompact import class_archive
from tests.support.configs import session_conf_of


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAKECOMPACT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-spark-conf"))  # not this machine's spark-defaults.conf
    return tmp_path / "cache"


def _java(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run([class_archive.java_binary(), *options, "-version"], capture_output=True, text=True,
                          check=False, timeout=120)


def _flags(options: str) -> dict[str, str]:
    """The flags of a real JVM started with these options (-XX:+PrintFlagsFinal): name -> value."""
    flags = _java(*options.split(), "-XX:+PrintFlagsFinal")
    assert flags.returncode == 0, flags.stderr
    return {line.split()[1]: line.split()[3] for line in flags.stdout.splitlines() if len(line.split()) > 3}


def _dumped(options) -> str:
    """A workload of class_archive.build: a real JVM that dumps the classes it loaded as it exits; its class path
    (the default)."""
    assert _java(*options).returncode == 0
    return ""


def _driver_options(one_shot: bool = False, spark_conf: dict | None = None) -> str:
    return session_conf_of({"conf": spark_conf or {}}, one_shot=one_shot)["spark.driver.extraJavaOptions"]


def test_an_archive_dumped_by_a_jvm_is_put_in_place_and_given_to_every_driver_jvm():
    assert class_archive.java_options() == []
    assert "SharedArchiveFile" not in _driver_options()

    path = class_archive.build(_dumped)
    assert path == class_archive.archive_path() and path.stat().st_size > 10_000
    options = class_archive.java_options()
    assert options[0] == f"-XX:SharedArchiveFile={path}"
    assert " ".join(options) in _driver_options()
    mapped = _java(*options, "-Xshare:on")  # on: fail rather than start without it
    assert mapped.returncode == 0, mapped.stderr
    assert "warning" not in mapped.stderr.lower()
    # a one-shot command's JVM (C1 only) maps the same archive
    assert "-XX:TieredStopAtLevel=1" in _driver_options(one_shot=True).split()
    assert "TieredStopAtLevel" not in _driver_options()  # `run` keeps the full JIT
    one_shot = _java(*options, "-XX:TieredStopAtLevel=1", "-Xshare:on")
    assert one_shot.returncode == 0 and "warning" not in one_shot.stderr.lower(), one_shot.stderr
    assert class_archive.build(lambda options: pytest.fail("built again")) == path


def test_the_option_printed_for_spark_submit_maps_the_archive():
    """spark-submit starts the driver's JVM with none of lakecompact's options: the printed one, as spark-submit
    passes it on, makes a JVM map the archive (-Xshare:on: or not start at all)."""
    path = class_archive.build(_dumped)
    advice, line = class_archive.for_spark_submit(path).splitlines()
    flag, options = shlex.split(line)
    assert (flag, options) == ("--driver-java-options", f"-XX:SharedArchiveFile={path}")
    assert "not --driver-class-path" in advice
    mapped = _java(*options.split(), "-Xshare:on")
    assert mapped.returncode == 0, mapped.stderr


def test_the_drivers_java_options_of_the_config_are_added_after_lakecompacts_and_win_where_they_conflict():
    ours = _driver_options(one_shot=True).split()
    combined = _driver_options(one_shot=True, spark_conf={"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4 -Dlake.x=1"})
    assert combined.split() == [*ours, "-XX:TieredStopAtLevel=4", "-Dlake.x=1"]
    # the JVM takes the last of two conflicting options: the user's full JIT, not lakecompact's C1 only
    assert _flags(combined)["TieredStopAtLevel"] == "4"


def test_a_garbage_collector_of_the_config_takes_the_place_of_lakecompacts():
    """The JVM takes one collector only: given two, it refuses to start ("Multiple garbage collectors selected")."""
    assert "-XX:+UseParallelGC" in _driver_options(one_shot=True).split()
    tuned = _driver_options(one_shot=True, spark_conf={"spark.driver.extraJavaOptions": "-XX:+UseAdaptiveSizePolicyWithSystemGC"})
    assert "-XX:+UseParallelGC" in tuned.split()  # an option that tunes the collector does not choose one
    combined = _driver_options(one_shot=True, spark_conf={"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"})
    assert "-XX:+UseParallelGC" not in combined.split() and combined.split()[-1] == "-XX:+UseSerialGC"
    values = _flags(combined)
    assert (values["UseSerialGC"], values["UseParallelGC"]) == ("true", "false")


def test_a_one_shot_commands_jvm_compiles_with_c1_and_keeps_the_full_code_cache():
    """C1 alone shrinks the code cache's default to 48 MB, which a command of many queries filled: a task of the
    demo died with "Out of space in CodeCache for adapters"."""
    values = _flags(_driver_options(one_shot=True))
    assert values["TieredStopAtLevel"] == "1"
    assert int(values["ReservedCodeCacheSize"]) == 240 * 1024 * 1024


def test_a_damaged_dump_is_never_put_in_place(cache):
    def dies_while_dumping(options):
        [dump] = [o.split("=", 1)[1] for o in options if o.startswith("-XX:ArchiveClassesAtExit=")]
        with open(dump, "wb") as half_written:
            half_written.write(b"\x00" * 4096)
        return ""

    assert class_archive.build(dies_while_dumping) is None
    assert not list(cache.iterdir())
    assert class_archive.java_options() == []


def test_an_archive_whose_size_changed_is_not_used(cache):
    path = class_archive.build(_dumped)
    with open(path, "r+b") as archive:
        archive.truncate(path.stat().st_size // 2)
    aborted = _java(f"-XX:SharedArchiveFile={path}", *class_archive.QUIET, f"-XX:ErrorFile={os.devnull}")
    assert aborted.returncode != 0  # what a JVM given it would do
    assert class_archive.java_options() == []


def test_the_java_options_of_spark_defaults_conf_come_before_lakecompacts(tmp_path, monkeypatch):
    """spark-submit reads spark-defaults.conf's driver options only when a launch sets none, and lakecompact always
    sets some: they would be dropped (a site's krb5.conf or proxy) without being added."""
    ours = _driver_options(one_shot=True).split()
    site = tmp_path / "spark-conf"
    site.mkdir()
    (site / "spark-defaults.conf").write_text(
        "# a site's defaults\n"
        "! another comment\n"
        "spark.executor.memory 1g\n"
        "spark.driver.extraJavaOptions   -Dsite.a=1 \\\n"
        "    -Dsite.path=C:\\\\dir -Dsite.name=caf\\u00e9\n"
        "spark.driver.memory=2g\n"
    )
    monkeypatch.setenv("SPARK_CONF_DIR", str(site))
    combined = _driver_options(one_shot=True, spark_conf={"spark.driver.extraJavaOptions": "-Dlake.x=1"})
    assert combined.split() == ["-Dsite.a=1", "-Dsite.path=C:\\dir", "-Dsite.name=café", *ours, "-Dlake.x=1"]
    (site / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions: -Dsite.b=2 \\")  # no line after it
    assert _driver_options(one_shot=True).split() == ["-Dsite.b=2", *ours]
    (site / "spark-defaults.conf").unlink()
    assert _driver_options(one_shot=True).split() == ours


def test_a_garbage_collector_of_spark_defaults_conf_takes_the_place_of_lakecompacts(tmp_path, monkeypatch):
    (tmp_path / "spark-defaults.conf").write_text("spark.driver.extraJavaOptions -XX:+UseSerialGC\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    options = _driver_options(one_shot=True)
    assert options.split()[0] == "-XX:+UseSerialGC" and "-XX:+UseParallelGC" not in options.split()
    values = _flags(options)  # a JVM given two collectors refuses to start
    assert (values["UseSerialGC"], values["UseParallelGC"]) == ("true", "false")


def test_a_build_removes_the_archives_of_installations_that_are_gone_and_keeps_another_installed_ones(cache, tmp_path):
    """Two environments with another pyspark each share the cache folder: neither's build deletes the other's."""
    java, spark_home = (str(p) for p in class_archive._installation())
    other_spark = tmp_path / "venv" / "pyspark"
    other_spark.mkdir(parents=True)
    archives = {"another installed": (java, str(other_spark)), "another gone": (java, str(tmp_path / "gone")),
                "this one, earlier": (java, spark_home), "without a record": None}
    cache.mkdir()
    for n, (name, made_for) in enumerate(archives.items()):
        archive = cache / f"{class_archive.PREFIX}4.{n}-{n:012d}.jsa"
        archive.write_text(name)
        class_archive._size_file(archive).write_text(str(len(name)))
        if made_for:
            class_archive._source_file(archive).write_text("\n".join(made_for))
    (cache / f"{class_archive.PREFIX}orphan.jsa.size").write_text("1")
    keep = class_archive.archive_path()
    class_archive._remove_stale(keep)
    left = sorted(p.name for p in cache.iterdir())
    assert [p.read_text() for p in sorted(cache.glob("*.jsa"))] == ["another installed"]
    assert len(left) == 3, left  # the archive, its size and its record

