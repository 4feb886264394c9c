"""The Hive metastore: Hive's standalone metastore (thrift) on the stack's PostgreSQL, its schema made by Hive's
schematool at the first start; with the s3a jars installed it runs with the s3a client, for lakes on s3a://. A spare
one (SPARE_METASTORE_URI) serves the same database, for tests that stop a metastore."""
from __future__ import annotations

from pathlib import Path

from .component import Component
from .install import s3a_jars, spark_home
from .postgres import ensure_role, psql_admin
from .processes import java, java_cmd, log, port_answers, run, spawn, write_common_conf
from .s3 import s3_spark_conf
from .settings import (
    CONF_DIR,
    HOST,
    METASTORE_DB,
    METASTORE_HEAP,
    METASTORE_HOME,
    METASTORE_JARS,
    METASTORE_LAUNCHER,
    METASTORE_PORT,
    SPARE_METASTORE_PORT,
    STACK_DIR,
)


def _conf_dir() -> Path:
    return CONF_DIR / "metastore"


def classpath() -> str:
    """The conf dir first: metastore-site.xml (and core-site.xml) are found on the class path.

    With the s3a jars installed, the metastore runs on pyspark's Hadoop client (the version hadoop-aws is
    built for; the metastore's own 3.3.6 is too old for it) with the s3a client: Hive makes the folder of every
    database, table and partition it registers, so a lake on ``s3a://`` needs it, as a production metastore
    does."""
    own = [f"{METASTORE_JARS}/*"]
    s3a = s3a_jars()
    if s3a:
        own = [str(p) for p in sorted(METASTORE_JARS.glob("*.jar")) if "hadoop-client" not in p.name]
        own += sorted(str(p) for p in (spark_home() / "jars").glob("hadoop-client-*.jar")) + s3a
    return ":".join([str(_conf_dir()), f"{METASTORE_HOME}/lib/*", *own,
                     str(METASTORE_LAUNCHER / "lakecompact-metastore.jar")])


def _write_conf() -> None:
    write_common_conf()
    db = METASTORE_DB
    values = {
        "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://{db.host}:{db.port}/{db.database}",
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": db.user,
        "javax.jdo.option.ConnectionPassword": db.password,
        # where a database or table created without a location goes (lakecompact always gives one)
        "metastore.warehouse.dir": str(STACK_DIR / "metastore" / "warehouse"),
        # the defaults name classes of hive-exec, which the standalone metastore does not ship
        "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
        "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
        # DataNucleus' pool otherwise keeps ~50 idle PostgreSQL connections
        "datanucleus.connectionPool.maxPoolSize": "5",
        "metastore.schema.verification": "true",
    }
    properties = "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in values.items())
    _conf_dir().mkdir(parents=True, exist_ok=True)
    s3a = {key.removeprefix("spark.hadoop."): value for key, value in s3_spark_conf().items()} if s3a_jars() else {}
    (_conf_dir() / "core-site.xml").write_text(
        "<?xml version=\"1.0\"?>\n<!-- written by the stack package: the stack's S3 for s3a:// locations -->\n"
        "<configuration>\n" + "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n"
                                       for k, v in s3a.items()) + "</configuration>\n")
    (_conf_dir() / "metastore-site.xml").write_text(
        f"<?xml version=\"1.0\"?>\n<!-- written by the stack package (rewritten on every up) -->\n"
        f"<configuration>\n{properties}</configuration>\n")


def _schema_ready() -> bool:
    db = METASTORE_DB.database
    if psql_admin(f"SELECT 1 FROM pg_database WHERE datname = '{db}'") != "1":
        return False
    return psql_admin("SELECT count(*) FROM pg_tables WHERE tablename = 'VERSION'", database=db) == "1"


def _setup() -> None:
    """The metastore's role and database, and its schema created by Hive's schematool (once)."""
    u, pw, db = METASTORE_DB.user, METASTORE_DB.password, METASTORE_DB.database
    ensure_role(u, pw, "LOGIN")
    if _schema_ready():
        return
    # no VERSION table: never initialised, or an init that was interrupted; start from an empty database
    psql_admin(f"DROP DATABASE IF EXISTS {db}")
    psql_admin(f"CREATE DATABASE {db} OWNER {u}")
    log(f"creating the metastore schema in PostgreSQL database {db} (Hive schematool -initSchema)")
    run([java(), "-Xmx256m", f"-Dlog4j2.configurationFile={CONF_DIR / 'log4j2.properties'}",
          "-cp", classpath(), "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
          "-dbType", "postgres", "-initSchema"], env={"METASTORE_HOME": str(METASTORE_HOME)}, timeout=300)


class Metastore(Component):
    """A metastore service, the stack's one or (``spare``) a second one on the same database."""

    title = "Hive metastore"

    def __init__(self, spare: bool = False):
        self.spare = spare
        self.name = "metastore-spare" if spare else "metastore"
        self.port = SPARE_METASTORE_PORT if spare else METASTORE_PORT

    @property
    def address(self) -> str:
        return f"thrift://{HOST}:{self.port}"

    def start(self) -> bool:
        """Needs PostgreSQL ready."""
        if self.pid():
            return False
        _write_conf()
        _setup()
        log(f"starting the Hive metastore on thrift://{HOST}:{self.port}")
        spawn(self.name, java_cmd(self.name, METASTORE_HEAP, "org.apache.hadoop.hive.metastore.LoopbackMetastore",
                                  HOST, str(self.port), classpath=classpath()))
        return True

    def ready(self) -> bool:
        """The port answers: the service opens it only once its database is reachable."""
        return port_answers(self.port)


SERVICE = Metastore()
SPARE = Metastore(spare=True)


def start_metastore(timeout: float = 120, *, spare: bool = False) -> None:
    """Start (or restart after stop_metastore) the metastore; PostgreSQL must be up. `spare`: a second metastore
    service on the same database (SPARE_METASTORE_URI), as production runs several; a test that stops its
    metastore stops the spare, and whoever else uses the stack's metastore meanwhile goes on."""
    metastore = SPARE if spare else SERVICE
    metastore.start()
    metastore.wait(timeout)


def stop_metastore(timeout: float = 60, *, spare: bool = False) -> None:
    (SPARE if spare else SERVICE).stop(timeout)
