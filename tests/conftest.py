"""One SparkSession per process (the run, or each pytest-xdist worker; local[2], embedded Hive metastore); each
test gets its own lake.

LAKECOMPACT_TEST_METASTORE switches the session to a shared Hive metastore (tests/support/databases.py).

Every test that uses Spark is marked `spark` (those using the `spark`, `lake` or `e2e_spark` fixture are marked
here; a test that starts Spark some other way carries the mark itself): `python -m pytest -m "not spark"` is the
quick loop, which starts no JVM.
"""

from __future__ import annotations

import os

import pytest

pytest.register_assert_rewrite("tests.support")  # the checks of its helpers report like a test's own asserts

from tests.support.databases import PREFIX, SHARED_METASTORE, database_name

os.environ.setdefault("LAKECOMPACT_SPARK_LOG_LEVEL", "ERROR")


# the fixtures that hand out a SparkSession; `fixturenames` is the closure of a test's fixtures, so a test
# that uses one of them through another fixture is found too
SPARK_FIXTURES = ("spark", "lake", "e2e_spark")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "spark: starts or uses Spark (a SparkSession fixture, or a lakecompact process); "
        "the quick loop is -m 'not spark'",
    )
    config.addinivalue_line(
        "markers", "alone: an end-to-end test that stops or kills a service of the stack the others share; "
        "runs with no other test at once (--e2e alone)",
    )


def pytest_addoption(parser):
    parser.addoption(
        "--e2e", choices=("include", "skip", "only", "together", "alone"), default="include",
        help="include, skip or run only the end-to-end tests, on top of -m and the paths given; `together`: those "
             "that can share the stack with others running at once, `alone`: those that stop or kill a service of "
             "it (marked `alone`). scripts/test.sh runs the others on two pytest-xdist workers, then `together` on "
             "two, then `alone` in one process",
    )


def pytest_collection_modifyitems(config, items):
    e2e = config.getoption("e2e")
    if e2e != "include":
        kept, dropped = [], []
        for item in items:
            (kept if _selected(item, e2e) else dropped).append(item)
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    # soak tests run only when asked for by name (-m soak): each takes minutes of kills and restarts
    soak_asked = "soak" in (config.getoption("markexpr") or "")
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SPARK_FIXTURES):
            item.add_marker(pytest.mark.spark)
        if "soak" in item.keywords and not soak_asked:
            item.add_marker(pytest.mark.skip(reason="a soak test: run it with scripts/test.sh -m soak"))


def _selected(item, e2e: str) -> bool:
    if e2e == "skip":
        return "e2e" not in item.keywords
    if e2e == "only":
        return "e2e" in item.keywords
    return "e2e" in item.keywords and ("alone" in item.keywords) == (e2e == "alone")


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the end-to-end modules of the Spark cluster as one file
    (tests/e2e/conftest.py:xdist_scope). (pytest-xdist's own `loadgroup` cannot group on pytest 9: it renames
    `item._nodeid`, which pytest 9 no longer reads.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    from tests.e2e.conftest import xdist_scope

    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return FileScheduling(config, log)


def _is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


# the stack components this run started (in the process that is no pytest-xdist worker), to stop at its end
_STARTED_STACK = pytest.StashKey[list]()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """That the package the tests' processes import is this checkout's (else one line, and no test runs). Then
    what the run's processes share of the e2e stack, started once for the whole run before pytest-xdist starts
    its workers (two workers starting it at once would race), and stopped at the end unless it was running before:
    the metastore (LAKECOMPACT_TEST_METASTORE=stack); for `--e2e together`, all of the stack the end-to-end tests
    use, so that no test's fixture stops a service another test uses at the same time."""
    if _is_xdist_worker(session.config) or session.config.option.collectonly:
        return
    from tests.support.cli import installed_elsewhere

    if wrong := installed_elsewhere():
        pytest.exit(wrong, returncode=pytest.ExitCode.USAGE_ERROR)
    import stack
    from tests.e2e.conftest import shared_components

    components = shared_components(stack) if session.config.getoption("e2e") == "together" else []
    if SHARED_METASTORE == "stack":
        components = components or ["postgres", "metastore"]
    if not components:
        return
    started = [name for name, info in stack.status().items() if name in components and not info["ready"]]
    try:
        stack.up(components=components)
    except stack.StackError as error:
        pytest.exit(f"the stack's {', '.join(components)} did not start: {error}", returncode=3)
    session.config.stash[_STARTED_STACK] = started


def pytest_sessionfinish(session):
    started = session.config.stash.get(_STARTED_STACK, [])
    if started:
        import stack

        stack.down(started)


@pytest.fixture(scope="session")
def metastore_uri():
    """The shared metastore the run uses ("" for the embedded one; `stack`: the e2e stack's, which
    pytest_sessionstart started)."""
    if SHARED_METASTORE != "stack":
        return SHARED_METASTORE
    import stack

    return stack.METASTORE_URI


@pytest.fixture(scope="session")
def spark(tmp_path_factory, metastore_uri):
    from pathlib import Path

    from lakecompact import config as config_module
    from lakecompact.spark import create_session

    root = tmp_path_factory.mktemp("spark")
    # Spark's Kafka and Avro jars and the JDBC drivers (scripts/stack/install.sh) on the one session, so e2e tests
    # can share it
    stack_jars = Path(__file__).resolve().parent.parent / ".stack" / "jars"
    jars = sorted(str(p) for folder in ("spark-kafka", "spark-avro", "jdbc") for p in (stack_jars / folder).glob("*.jar"))
    config = config_module.from_dict(
        {
            "warehouse": str(root / "warehouse"),
            "source": {"kind": "files", "paths": [str(root / "none")]},
            **({"metastore": {"uri": metastore_uri}} if metastore_uri else {}),
            "spark": {
                "master": "local[2]",
                "conf": {
                    # one JVM serves a worker's few hundred tests, and what they keep alive grows with them (its
                    # status store's last 1,000 queries, the plans the tests' DataFrames hold): at 1g, an example
                    # late in the run that decodes a 9 MB value (test_damage_property.py) ran out of heap
                    "spark.driver.memory": "2g",
                    "spark.sql.shuffle.partitions": "4",
                    "spark.default.parallelism": "4",
                    "spark.ui.enabled": "false",
                    "spark.sql.adaptive.enabled": "true",
                    # the tests' data is a few rows per query, where compiling a query's Java code costs more than
                    # running it does: expressions are interpreted here. Every command a test runs as a process
                    # of its own (tests/support/cli.py, spark-submit) keeps Spark's generated code, so both ways
                    # of evaluating are tested
                    "spark.sql.codegen.wholeStage": "false",
                    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
                    "spark.driver.host": "127.0.0.1",
                    "spark.driver.bindAddress": "127.0.0.1",
                    **({"spark.jars": ",".join(jars)} if jars else {}),
                },
            },
        }
    )
    session = create_session(config)
    yield session
    if metastore_uri:  # a shared metastore outlives the run: the databases this process created go with it
        for row in session.sql("SHOW DATABASES").collect():
            if row[0].startswith(PREFIX):
                session.sql(f"DROP DATABASE IF EXISTS `{row[0]}` CASCADE")
    session.stop()


@pytest.fixture
def lake(spark, tmp_path):
    from tests.support.lake import Lake

    return Lake(spark, tmp_path, database_name())


@pytest.fixture
def careful_calls(monkeypatch) -> list[str]:
    """One entry per time a land took the careful way (`Landing._land_careful`): none, every topic took one pass."""
    from lakecompact.landing.land import Landing

    calls: list[str] = []
    careful = Landing._land_careful

    def spied(self, *args, **kwargs):
        calls.append("careful")
        return careful(self, *args, **kwargs)

    monkeypatch.setattr(Landing, "_land_careful", spied)
    return calls
