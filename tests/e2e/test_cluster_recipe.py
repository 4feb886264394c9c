"""docs/production.md's cluster recipe, followed as a user without a checkout follows it: the wheel built and
installed in a fresh environment outside the checkout, `spark-submit` on the stack's Spark cluster with the s3a
client given by `--packages "$S3A_PACKAGES" --exclude-packages "$S3A_EXCLUDES"` as the page writes them, the
warehouse on the stack's S3 and the tables in its metastore. The packages come from the local Maven repository that
scripts/stack/install.sh fills (an Ivy settings file that names only it, as the page says a mirror is named), so
nothing is downloaded. The demo's first events (installed with the package) are landed, compacted and read back.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e import support
from tests.e2e.support import cluster
from tests.support.wheel import build_wheel, install_in_venv

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "production.md"
LOCAL_MAVEN = Path.home() / ".m2" / "repository"
IVY_SETTINGS = """<ivysettings>
  <settings defaultResolver="local-maven"/>
  <resolvers>
    <ibiblio name="local-maven" m2compatible="true" usepoms="true" root="{root}"/>
  </resolvers>
</ivysettings>
"""


def page_variable(name: str) -> str:
    """A shell variable the page sets (`NAME=value` on a line of its own), as the page writes it."""
    [value] = re.findall(rf"^{name}=(\S+)$", PAGE.read_text(), re.MULTILINE)
    return value


class Recipe:
    """The page's `spark-submit … "$MAIN" --config lake.toml <command>` in a folder outside the checkout."""

    def __init__(self, stack, folder: Path, python: Path, main: Path, config: Path):
        self.stack, self.folder, self.python, self.main, self.config = stack, folder, python, main, config
        (folder / "ivysettings.xml").write_text(IVY_SETTINGS.format(root=LOCAL_MAVEN.as_uri() + "/"))

    def command(self, *args: str) -> list[str]:
        settings = {
            # where the packages come from and where Ivy keeps them: the test's own, not the user's ~/.ivy2.5.2
            "spark.jars.ivySettings": str(self.folder / "ivysettings.xml"),
            "spark.jars.ivy": str(self.folder / "ivy"),
            # this machine: loopback only, the driver's Python the installed one, executors without Python
            "spark.pyspark.driver.python": str(self.python),
            "spark.pyspark.python": self.stack.CLUSTER_PYTHON,
            "spark.driver.host": self.stack.HOST,
            "spark.driver.bindAddress": self.stack.HOST,
            "spark.ui.enabled": "false",
            "spark.executor.extraJavaOptions": cluster.C1_ONLY,
            # one executor, on whichever worker the master picks: each executor fetches the packages' jars (the
            # AWS SDK's bundle is hundreds of MB), and one shows that executors get the s3a client as well as two
            "spark.cores.max": "1",
        }
        return [str(self.stack.spark_home() / "bin" / "spark-submit"),
                "--master", self.stack.SPARK_MASTER_URL, "--deploy-mode", "client",
                "--packages", page_variable("S3A_PACKAGES"), "--exclude-packages", page_variable("S3A_EXCLUDES"),
                "--driver-java-options", cluster.C1_ONLY,
                *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")],
                str(self.main), "--config", str(self.config), *args]

    def run(self, name: str, *args: str) -> cluster.Job:
        return cluster.start(self.folder, name, self.command(*args), args).finish(timeout=900)


@pytest.fixture(scope="module")
def followed(st, stack, tmp_path_factory):
    """The recipe followed once: the wheel installed, then `land`, `compact` and a `sql` read of both views."""
    assert (LOCAL_MAVEN / "org" / "apache" / "hadoop" / "hadoop-aws").is_dir(), \
        f"{LOCAL_MAVEN} has no hadoop-aws: run scripts/stack/install.sh"
    folder = tmp_path_factory.mktemp("cluster_recipe")
    python = install_in_venv(build_wheel(folder / "wheel"), folder / "venv")
    # the page's MAIN=…, asked of the installed package from outside the checkout
    package = Path(subprocess.run([python, "-c", "import lakecompact, os; print(os.path.dirname(lakecompact.__file__))"],
                                  cwd=folder, capture_output=True, text=True, check=True).stdout.strip())
    run, database = support.unique("recipe"), support.unique("recipe")
    config = cluster.s3_lake_toml(st, folder / "lake.toml", run, database,
                                  events=package / "demo_events" / "part-1.jsonl")
    recipe = Recipe(st, folder, python, package / "__main__.py", config)
    jobs = {}
    with cluster.metastore_reading_s3(st):
        try:
            jobs["land"] = recipe.run("land", "land")
            jobs["compact"] = recipe.run("compact", "compact")
            jobs["sql"] = recipe.run("sql", "sql", cluster.demo_part_1_query(database))
            yield {"jobs": jobs, "package": package, "ivy": folder / "ivy", "recipe": recipe}
        finally:
            if os.environ.get("LAKECOMPACT_KEEP_STACK") != "1":
                try:
                    recipe.run("drop", "sql", f"DROP DATABASE IF EXISTS `{database}` CASCADE")
                finally:
                    cluster.delete_objects(st, f"{run}/")


def test_the_wheel_runs_installed_outside_the_checkout(followed):
    package = followed["package"]
    assert "site-packages" in package.parts and PAGE.parents[1] not in package.parents, package
    for job in followed["jobs"].values():
        assert str(package / "__main__.py") in job.process.args


def test_packages_as_the_page_writes_them_give_driver_and_executors_the_s3a_client(followed):
    """Five jars, those of the page's table (with the SDK bundle and what hadoop-aws names), none of the stack's."""
    command = followed["recipe"].command("land")
    assert not [arg for arg in command if ".stack" in arg], command
    jars = sorted(p.name for p in (followed["ivy"] / "jars").glob("*.jar"))
    assert [re.sub(r"-[0-9][^-]*(\.Final)?\.jar$", "", name) for name in jars] == [
        "org.apache.hadoop_hadoop-aws", "org.apache.spark_spark-hadoop-cloud_2.13", "org.wildfly.openssl_wildfly-openssl",
        "software.amazon.awssdk_bundle", "software.amazon.s3.analyticsaccelerator_analyticsaccelerator-s3"], jars
    versions = dict(coordinate.rsplit(":", 1) for coordinate in page_variable("S3A_PACKAGES").split(","))
    assert f"org.apache.hadoop_hadoop-aws-{versions['org.apache.hadoop:hadoop-aws']}.jar" in jars


def test_land_and_compact_on_the_cluster_and_the_views_read_back(followed):
    jobs = followed["jobs"]
    assert re.search(r"^land: batch 1\b", jobs["land"].stdout, re.MULTILINE), jobs["land"].tail()
    assert re.search(r"^compact public_customers: base v0 -> v1:", jobs["compact"].stdout, re.MULTILINE), \
        jobs["compact"].tail()
    assert cluster.demo_part_1_rows(jobs["sql"]) == cluster.DEMO_PART_1, jobs["sql"].tail()
