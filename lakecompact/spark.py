"""The SparkSession factory: local[*] by default, UTC, Hive metastore embedded or external, s3a settings and
committers for a warehouse on S3."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

from py4j.java_gateway import JavaClass
from pyspark import SparkConf, SparkContext
from pyspark import __version__ as pyspark_version
from pyspark.errors import PySparkRuntimeError
from pyspark.find_spark_home import _find_spark_home
from pyspark.java_gateway import launch_gateway
from pyspark.sql import Column, DataFrame, Observation, SparkSession

from lakecompact import class_archive, metastore_guard, thrift_metastore
from lakecompact.config import Config, is_local, local_path, scheme, url_without_path
from lakecompact.errors import (
    JvmStartFailed,
    LakecompactError,
    MissingObjectStoreClient,
    ObjectStoreUnavailable,
)

LOG4J_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"
# jars for the Kafka and Avro sources and the s3a client, fetched by scripts/stack/install.sh into the stack's
# state dir (LAKECOMPACT_STACK_DIR, as scripts/stack/stack.py finds it); clusters use --packages instead.
STACK_JARS = Path(os.environ.get("LAKECOMPACT_STACK_DIR") or Path(__file__).resolve().parent.parent / ".stack") / "jars"
KAFKA_JAR_FOLDERS = ("spark-kafka", "spark-avro")
S3A_JAR_FOLDERS = ("s3a",)  # hadoop-aws, the AWS SDK's bundle, spark-hadoop-cloud
S3A_PREFIX = "spark.hadoop.fs.s3a."  # the s3a client's settings, as Spark passes them to Hadoop
# the S3A committers, bound into Spark (Spark's docs/cloud-integration.md, Hadoop's committer docs): a task's
# files go to their place as multipart uploads that the job's commit completes. Spark's own committer renames,
# twice, and S3 renames by copying every object
S3A_COMMITTER_CONF = {
    "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
    "spark.sql.parquet.output.committer.class": "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
    "spark.hadoop.mapreduce.outputcommitter.factory.scheme.s3a": "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
}
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
# What the JVM prints as it starts when an incubator module is added, as Spark's launcher always does
# (--add-modules=jdk.incubator.vector, for MLlib's vector BLAS, which lakecompact does not use); no JVM option
# silences it, so it is taken out of the JVM's stderr (_launch_jvm)
INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector\n"
# a one-shot command's JIT (_local_master_conf): C1 alone, with the full JIT's code cache
ONE_SHOT_JIT = ("-XX:TieredStopAtLevel=1", "-XX:ReservedCodeCacheSize=240m")
# the work from which a one-shot command's full JIT (C2) pays for its compilations: C1's code without profiling is
# faster for a small command, C2's for a large one (docs/configuration.md "Spark and JVM settings")
FULL_JIT_EVENT_BYTES = 1 << 30  # of event files a `land` reads
FULL_JIT_ROWS = 1_000_000  # of increments a `compact` folds in
# where Hive's session keeps resources added to it (ADD JAR, ADD FILE): by default a folder per session in the JVM's
# temporary folder, which Spark never deletes (SPARK-51571), so that every command would leave one in /tmp
HIVE_RESOURCES_DIR = "spark.hadoop.hive.downloaded.resources.dir"
# a Java option that selects the garbage collector (not one that tunes it, such as -XX:+UseGCOverheadLimit)
CHOSEN_COLLECTOR = re.compile(r"-XX:\+Use(Serial|Parallel|G1|Z|Shenandoah|Epsilon)GC\b")


def spark_defaults_path() -> Path:
    """The spark-defaults.conf that spark-submit reads: in SPARK_CONF_DIR, else in SPARK_HOME's conf."""
    conf_dir = os.environ.get("SPARK_CONF_DIR") or str(Path(os.environ.get("SPARK_HOME") or _find_spark_home()) / "conf")
    return Path(conf_dir) / "spark-defaults.conf"


def spark_defaults() -> dict[str, str]:
    """The settings of spark-defaults.conf ({} without one). spark-submit takes a setting from it only when the
    launch gives none, and lakecompact always gives the driver's Java options (and, for the Kafka source on a
    machine with the stack's jars, `spark.jars`): a site's (a krb5.conf, a proxy, a JDBC driver) would be dropped
    without a word, so lakecompact puts them first in its own."""
    path = spark_defaults_path()
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8", errors="replace")  # as Spark reads it
    return {key: value.strip() for key, value in _java_properties(text).items()}


def _java_properties(text: str) -> dict[str, str]:
    """java.util.Properties' format as spark-submit reads it: `key value`, `key=value` or `key: value`, comments
    starting with # or !, a line that ends in a backslash continued on the next (its leading blanks dropped)."""
    properties, logical = {}, ""
    for line in [*text.splitlines(), ""]:  # a last line continued on none still counts
        line = line.lstrip() if logical else line.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd count: the last one escapes the line's end
            logical += line[:-1]
            continue
        logical += line
        key, value = re.match(r"((?:[^\\\s=:]|\\.)*)\s*[=:]?\s*(.*)", logical).groups()
        properties[_unescaped(key)] = _unescaped(value)
        logical = ""
    return properties


def _unescaped(text: str) -> str:
    controls = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 5
                  else controls.get(m[1], m[1]), text)


def jvm_class(spark: SparkSession, name: str):
    """The JVM class of this full name (its constructor and static members), for py4j calls. `jvm.org.apache.…`
    asks the JVM about each package on the way, and each of those misses searches every jar on the class path:
    ~2 ms per use, where this costs nothing until the class is called."""
    return JavaClass(name, spark.sparkContext._gateway._gateway_client)


def warehouse_uri(warehouse: str) -> str:
    """A Hadoop URI for the warehouse: plain absolute paths become file: URIs."""
    return warehouse if scheme(warehouse) else f"file:{warehouse}"


def session_conf(
    config: Config, *, verbose: bool = False, archive_options: tuple[str, ...] = (), one_shot: bool = False
) -> dict[str, str]:
    """Spark settings lakecompact needs, before the user's [spark.conf] overrides (the driver's Java options
    are added to, not replaced).

    Unless `verbose`, Spark logs errors only, from the JVM's start on (log4j2.properties beside this file). The
    driver JVM maps the class archive when there is one (class_archive.py); `archive_options`, when given, take
    the place of that (class_archive.build starts the JVM that dumps a new one). `one_shot`: the JVM lives for
    one command (not `run`).
    """
    site = spark_defaults()
    metastore, metastore_options = _metastore_conf(config)
    local, local_options = _local_master_conf(config, site, one_shot=one_shot)
    user_conf = dict(config.spark.conf)
    java_options = [
        *_driver_java_options(site, verbose=verbose, archive_options=archive_options),
        *metastore_options,
        *local_options,
        # added after lakecompact's rather than in their place: where two options conflict the JVM takes the
        # last (the user's; the collector, which the JVM takes only once, is left out then), and the rest (class
        # archive, log4j) still apply
        *([user_conf.pop(DRIVER_JAVA_OPTIONS)] if DRIVER_JAVA_OPTIONS in user_conf else []),
    ]
    conf = {**_sql_conf(config), **metastore, **local}
    if java_options:
        conf[DRIVER_JAVA_OPTIONS] = " ".join(java_options)
    conf |= object_store_conf(config)
    conf |= _jar_conf(config, site)
    return {**conf, **user_conf}


def _driver_java_options(site: dict[str, str], *, verbose: bool, archive_options: tuple[str, ...]) -> list[str]:
    """spark-defaults.conf's options first: where two conflict the JVM takes the last (lakecompact's, then the
    user's); then the log4j configuration and the class archive."""
    site_options = site.get(DRIVER_JAVA_OPTIONS, "")
    return [
        *([site_options] if site_options else []),
        *([] if verbose else [f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"]),
        *(archive_options or class_archive.java_options()),
    ]


def _sql_conf(config: Config) -> dict[str, str]:
    """How lakecompact's SQL reads and writes: UTC, the Hive catalog, parquet as the tables store it, secrets kept
    out of Spark's UI, logs and plans."""
    root = warehouse_uri(config.warehouse).rstrip("/")
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": f"{root}/_spark_warehouse",
        "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
        "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
        "spark.sql.sources.partitionOverwriteMode": "static",
        "spark.sql.hive.convertMetastoreParquet": "true",
        "spark.sql.legacy.charVarcharAsString": "true",
        "spark.ui.showConsoleProgress": "false",
        # the metastore's filter parser rejects names starting with _, as our partition columns do;
        # partitions are few (buckets, pending batches), so Spark prunes them itself
        "spark.sql.hive.metastorePartitionPruning": "false",
        # Spark's own list, and Kafka's SASL settings (source.kafka_options), hidden in its UI, logs and plans
        "spark.redaction.regex": "(?i)secret|password|token|access[.]key|jaas|sasl",
        "spark.sql.redaction.options.regex": "(?i)url|jaas|sasl|password|secret|token",
    }


def _metastore_conf(config: Config) -> tuple[dict[str, str], list[str]]:
    """The Hive metastore's settings, and the driver's Java options it needs: a thrift metastore, one read
    through JDBC, or the embedded Derby metastore."""
    metastore, conf, java_options = config.metastore, {}, []
    if metastore.uri:
        conf["spark.hadoop.hive.metastore.uris"] = metastore.uri
        conf |= thrift_metastore.client_conf(metastore)
    elif metastore.jdbc_url:
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = metastore.jdbc_url
        conf["spark.hadoop.datanucleus.schema.autoCreateAll"] = "true"
        conf["spark.hadoop.hive.metastore.schema.verification"] = "false"
        for key, value in [
            ("ConnectionDriverName", metastore.jdbc_driver),
            ("ConnectionUserName", metastore.jdbc_user),
            ("ConnectionPassword", metastore.jdbc_password),
        ]:
            if value:
                conf[f"spark.hadoop.javax.jdo.option.{key}"] = value
    elif (metastore_dir := embedded_metastore(config)) is not None:
        # the embedded Derby metastore lives with the data it describes
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={metastore_dir / 'metastore_db'};create=true"
        )
        java_options.append(f"-Dderby.stream.error.file={metastore_dir / 'derby.log'}")
    return conf, java_options


def one_shot_jit(work: int | None, full_from: int) -> bool:
    """Whether a command whose work is `work` (None: not known before its JVM starts) keeps a one-shot command's
    JIT (ONE_SHOT_JIT), or starts its JVM with the full one from `full_from` on."""
    return work is None or work < full_from


def _local_master_conf(config: Config, site: dict[str, str], *, one_shot: bool) -> tuple[dict[str, str], list[str]]:
    """A local master that lakecompact launches: settings and Java options for a whole job in one JVM on a few
    cores (none for a cluster, or a JVM that spark-submit started)."""
    if not config.spark.master.startswith("local") or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return {}, []
    conf = {
        # Spark's 200 shuffle partitions are for clusters: on a few local cores most would be empty tasks
        "spark.sql.shuffle.partitions": str(4 * (os.cpu_count() or 2)),
        # a read of more than 32 folders (a table's buckets) lists them in a Spark job of its own; on a local
        # master the job's tasks run in this JVM, so the job is only its scheduling
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        # every sort and hash aggregate of a task takes at least one page, which Spark sizes from the heap for
        # tasks of many rows; a compaction's tasks hold a bucket's share of a change, and big pages only feed the GC
        "spark.buffer.pageSize": "2m",
    }
    java_options = []
    # the whole job in one JVM on a few cores: G1's concurrent threads take cores the tasks need. Not when the
    # user or spark-defaults.conf chose a collector: the JVM refuses to start with two ("Multiple garbage
    # collectors selected")
    if not CHOSEN_COLLECTOR.search(f"{site.get(DRIVER_JAVA_OPTIONS, '')} {config.spark.conf.get(DRIVER_JAVA_OPTIONS, '')}"):
        java_options.append("-XX:+UseParallelGC")
    if one_shot:
        # a command's JVM ends before C2's compilations pay off, and on a few cores they take a core from the
        # tasks; `run`, which lives long, keeps the full JIT.
        # C1 alone shrinks the code cache's default to 48 MB, which a command of many queries fills ("Out of
        # space in CodeCache for adapters"): the full JIT's 240 MB, reserved, not used
        java_options += list(ONE_SHOT_JIT)
    return conf, java_options


def _jar_conf(config: Config, site: dict[str, str]) -> dict[str, str]:
    """The stack's jars the config needs: the Kafka source's in `spark.jars` (after spark-defaults.conf's); the
    s3a client's on the class paths, not in spark.jars, which copies each jar to every executor (the AWS SDK's is
    hundreds of MB). The driver's class path applies when lakecompact starts the JVM; spark-submit takes
    --driver-class-path."""
    conf = {}
    jars = _stack_jars(config, KAFKA_JAR_FOLDERS if config.source.kind == "kafka" else ())
    if jars:
        conf["spark.jars"] = ",".join(filter(None, [site.get("spark.jars"), *jars]))
    class_path = _stack_jars(config, S3A_JAR_FOLDERS if _uses_s3a(config) else ())
    for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath") if class_path else ():
        conf[key] = os.pathsep.join(filter(None, [site.get(key), *class_path]))
    return conf


def _uses_s3a(config: Config) -> bool:
    return any(scheme(location) == "s3a" for location in (config.warehouse, *config.source.paths))


def object_store_conf(config: Config) -> dict[str, str]:
    """[s3] as the s3a client's settings, and the S3A committers for an s3a:// warehouse (a local or HDFS one
    keeps Spark's own committer, which renames)."""
    conf = {}
    s3 = config.s3
    if s3 is not None:
        options = {
            "endpoint": s3.endpoint,
            "endpoint.region": s3.region,
            "path.style.access": str(s3.path_style_access).lower(),
            "access.key": s3.access_key,
            "secret.key": s3.secret_key,
            "session.token": s3.session_token,
        }
        conf |= {S3A_PREFIX + key: value for key, value in options.items() if value}
        if s3.endpoint.startswith("http://"):
            conf[S3A_PREFIX + "connection.ssl.enabled"] = "false"
        if s3.session_token:
            # the default chain would take the two keys without the token, which S3 refuses for temporary keys
            conf[S3A_PREFIX + "aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    if scheme(config.warehouse) == "s3a":
        committer = s3.committer if s3 is not None else "magic"
        conf[S3A_PREFIX + "committer.name"] = committer
        if committer == "magic":
            conf[S3A_PREFIX + "committer.magic.enabled"] = "true"
        conf |= S3A_COMMITTER_CONF
    return conf


# what Spark and Hadoop say when a class of the s3a client, its AWS SDK or Spark's cloud committers is not on the
# class path (Hive's client says it without the colon; Spark checks its commit protocol as it reads its settings)
MISSING_S3A_CLASS = re.compile(r"(ClassNotFoundException|NoClassDefFoundError)\W+(?:Class )?"
                               r"([\w.$/]*(?:\.s3a\.|internal\.io\.cloud\.|awssdk)[\w.$/]*)")
UNLOADABLE_COMMITTER = re.compile(r"The value '(org\.apache\.spark\.internal\.io\.cloud\.\w+)' in the config "
                                  r"\"([\w.]+)\" is invalid")
NO_S3A_FILE_SYSTEM = 'No FileSystem for scheme "s3a"'
# the s3a client's classes, in its messages and in the stack trace of a failed call
S3A_CLIENT_SIGNS = ("org.apache.hadoop.fs.s3a.", "software.amazon.awssdk.")
S3_REFUSED_SIGNS = ("java.nio.file.AccessDeniedException", "Status Code: 403", "Status Code: 401", "InvalidAccessKeyId",
                    "SignatureDoesNotMatch", "NoAuthWithAWSException", "ExpiredToken", "InvalidToken")
S3_UNREACHABLE_SIGNS = ("java.net.ConnectException", "Connection refused", "UnknownHostException",
                        "Unable to execute HTTP request", "AWSApiCallTimeoutException", "ConnectTimeoutException",
                        "SocketTimeoutException", "connect timed out")
SECRET_KEY = re.compile(r"(?i)secret|password|token|access[.]key")


def as_object_store_error(error: BaseException, config: Config) -> LakecompactError | None:
    """The one-line error for a failure of the s3a client (None: another failure): its jars missing from the class
    path, or its endpoint not answering or refusing the credentials."""
    text = str(error)
    if missing := MISSING_S3A_CLASS.search(text):
        return MissingObjectStoreClient(f"{missing[1]}: {missing[2]}", s3a_packages())
    if unloadable := UNLOADABLE_COMMITTER.search(text):
        return MissingObjectStoreClient(f"{unloadable[2]} = {unloadable[1]}: no such class", s3a_packages())
    if NO_S3A_FILE_SYSTEM in text:
        return MissingObjectStoreClient(NO_S3A_FILE_SYSTEM, s3a_packages())
    if not any(sign in text for sign in S3A_CLIENT_SIGNS):
        return None
    for signs, problem in [
        (S3_REFUSED_SIGNS, ("refused the credentials (s3.access_key, s3.secret_key, s3.session_token, or the s3a "
                           "client's own credential chain)")),
        (S3_UNREACHABLE_SIGNS, "did not answer"),
    ]:
        line = next((line for line in text.splitlines() if any(sign in line for sign in signs)), None)
        if line is not None:
            last = _redacted(line.partition(" (SDK Attempt Count")[0], config)
            return ObjectStoreUnavailable(_s3_endpoint(config), problem,
                                          textwrap.shorten(last, 240, placeholder=" …").strip(" :"))
    return None


def _s3_endpoint(config: Config) -> str:
    """The endpoint as a message may name it: scheme, host and port."""
    endpoint = config.spark.conf.get(S3A_PREFIX + "endpoint") or (config.s3.endpoint if config.s3 else "")
    if not endpoint:
        region = config.spark.conf.get(S3A_PREFIX + "endpoint.region") or (config.s3.region if config.s3 else "")
        return f"of AWS{f' (region {region})' if region else ''}"
    return url_without_path(endpoint).removesuffix("/…") if "://" in endpoint else endpoint.split("@")[-1]


def _redacted(text: str, config: Config) -> str:
    secrets = [config.s3.access_key, config.s3.secret_key, config.s3.session_token] if config.s3 else []
    secrets += [value for key, value in config.spark.conf.items() if SECRET_KEY.search(key)]
    for secret in sorted(filter(None, secrets), key=len, reverse=True):  # one inside another: the longer first
        text = text.replace(secret, "***")
    return text


def s3a_packages() -> str:
    """The Maven coordinates of the s3a client and Spark's cloud committers for this Spark and its Hadoop."""
    jars = Path(os.environ.get("SPARK_HOME") or _find_spark_home()) / "jars"
    names = [jar.name for jar in jars.glob("*.jar")]
    hadoop = next((m[1] for m in map(re.compile(r"hadoop-(?:client-api|common)-(\d[\w.-]*)\.jar").fullmatch, names)
                   if m), "<Spark's Hadoop version>")
    core = next((m for m in map(re.compile(r"spark-core_(\d+\.\d+)-(\d[\w.-]*)\.jar").fullmatch, names) if m), None)
    scala, spark_version = (core[1], core[2]) if core else ("2.13", pyspark_version)
    return f"org.apache.hadoop:hadoop-aws:{hadoop},org.apache.spark:spark-hadoop-cloud_{scala}:{spark_version}"


def _stack_jars(config: Config, folders: tuple[str, ...]) -> list[str]:
    """The stack's jars in these folders (the Kafka source's, the s3a client's), unless the user names packages
    of their own or spark-submit started the JVM (its --jars and class paths are the user's: the session's
    settings would replace them)."""
    if "spark.jars.packages" in config.spark.conf or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return []
    return [str(jar) for folder in folders for jar in sorted((STACK_JARS / folder).glob("*.jar"))]


def embedded_metastore(config: Config) -> Path | None:
    """The folder of the embedded Derby metastore, or None when the config names a shared one."""
    if config.metastore.uri or config.metastore.jdbc_url or not is_local(config.warehouse):
        return None
    return local_path(config.warehouse) / "_metastore"


def create_session(
    config: Config, *, wait: bool = True, verbose: bool = False, archive_options: tuple[str, ...] = (),
    scheduler_pools: bool = False, one_shot: bool = False,
) -> SparkSession:
    """Build (or join) the session; under spark-submit the master comes from spark-submit.

    On the embedded metastore one process works at a time: a second one waits for the first (or, with
    wait=False, raises MetastoreBusy) before its JVM touches the metastore. `scheduler_pools`: jobs of
    threads in different scheduler pools share the cores fairly (`lakecompact run`). `one_shot`: see session_conf.
    """
    metastore_dir = embedded_metastore(config)
    if metastore_dir is not None and SparkSession.getActiveSession() is None:
        metastore_guard.hold(metastore_dir, wait=wait)
    if config.metastore.uri and SparkSession.getActiveSession() is None:
        thrift_metastore.wait_until_reachable(config.metastore)
    if is_local(config.warehouse):
        (local_path(config.warehouse) / "_metastore").mkdir(parents=True, exist_ok=True)
    options = {"spark.app.name": config.spark.app_name}
    launched_by_spark_submit = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    if not launched_by_spark_submit:  # else spark-submit's --master must win
        options["spark.master"] = config.spark.master
    if scheduler_pools:
        options["spark.scheduler.mode"] = "FAIR"  # before session_conf: the user's setting wins
    options |= session_conf(config, verbose=verbose, archive_options=archive_options, one_shot=one_shot)
    options["spark.sql.catalogImplementation"] = "hive"  # Hive support, whatever [spark.conf] says
    if SparkContext._active_spark_context is None:
        options |= _hive_resources_conf(options)
    try:
        if SparkContext._gateway is None and not launched_by_spark_submit:
            _launch_jvm(options)
        spark = SparkSession.builder.config(map=options).getOrCreate()
    except PySparkRuntimeError as error:
        if error.getCondition() != "JAVA_GATEWAY_EXITED":
            raise
        given, site = config.spark.conf.get(DRIVER_JAVA_OPTIONS), spark_defaults().get(DRIVER_JAVA_OPTIONS)
        where = [f"[spark.conf] ({DRIVER_JAVA_OPTIONS} = {given!r} there)"] if given else []
        where += [f"{spark_defaults_path()} ({DRIVER_JAVA_OPTIONS} = {site!r} there)"] if site else []
        expected = (f"Java options and memory it accepts in {' and '.join(where)}" if where
                    else "Java 17 (scripts/setup.sh installs it) and memory it accepts in [spark.conf]")
        raise JvmStartFailed(
            f"the Spark driver's JVM exited as it started (its own message is above): expected {expected}") from None
    spark.sparkContext.setLogLevel(os.environ.get("LAKECOMPACT_SPARK_LOG_LEVEL", "WARN" if verbose else "ERROR"))
    return spark


def _hive_resources_conf(options: dict[str, str]) -> dict[str, str]:
    """Hive's resources folder inside a folder of this process's own, deleted as the process exits (lakecompact
    adds no resources: the folder stays empty). A folder set in [spark.conf] or spark-defaults.conf is kept."""
    if HIVE_RESOURCES_DIR in options or HIVE_RESOURCES_DIR in spark_defaults():
        return {}
    folder = tempfile.mkdtemp(prefix="lakecompact-hive-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return {HIVE_RESOURCES_DIR: f"{folder}/${{hive.session.id}}_resources"}


def _launch_jvm(options: dict[str, str]) -> None:
    """Start the driver's JVM with these settings, as the session's builder would, but with its stderr passed on
    by a thread, less INCUBATOR_WARNING. A JVM that exits as it starts has said why once this returns."""
    read, write = os.pipe()
    relay = threading.Thread(target=_pass_on_stderr, args=(read,), name="jvm-stderr", daemon=True)
    relay.start()
    try:
        gateway = launch_gateway(SparkConf().setAll(options.items()), popen_kwargs={"stderr": write})
    except PySparkRuntimeError:
        os.close(write)
        relay.join(timeout=30)  # until the JVM's last words are out
        raise
    os.close(write)  # the JVM holds its own end
    SparkContext._ensure_initialized(gateway=gateway)


def _pass_on_stderr(fd: int) -> None:
    """Each line to this process's stderr, with os.write: a daemon thread must not hold Python's stderr buffer
    while the interpreter exits."""
    with os.fdopen(fd, "rb") as pipe:
        for line in pipe:
            if line != INCUBATOR_WARNING:
                os.write(2, line)


def write_counted(
    frame: DataFrame, write: Callable[[DataFrame], None], written: Callable[[], DataFrame], *, observe: bool = True,
    **aggregates: Column,
) -> dict[str, int]:
    """Run `write(frame)` and the aggregates over the rows it wrote, computed while writing (no second read).

    When the optimizer proved the result empty, it drops the observation with the plan's other nodes: then the
    aggregates are computed over `written()`, the rows as read back. `observe=False`: always so. Spark evaluates
    an observation's aggregates row by row without generated code; many of them over many rows cost more than a
    second read of the columns they need.
    """
    columns = [column.alias(name) for name, column in aggregates.items()]
    if not observe:
        write(frame)
        return written().agg(*columns).first().asDict()
    observation = Observation()
    write(frame.observe(observation, *columns))
    try:
        return observation.get
    except Exception:  # noqa: BLE001 - py4j: "assertion failed" on the empty row of an observation that never ran
        return written().agg(*columns).first().asDict()
