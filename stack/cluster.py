"""The stack's Spark standalone cluster: a master and two workers of pyspark's own Spark, whose executors have no
Python by default (CLUSTER_PYTHON); spark_submit_command() submits to it, kill_worker()/start_worker() are for
failure tests."""
from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import requests

from .component import Component
from .install import s3a_jars, spark_home
from .processes import descendants, log, pid_alive, pidfile, poll, spawn
from .settings import (
    CLUSTER_DIR,
    CLUSTER_PYTHON,
    CONF_DIR,
    HOST,
    LOG_DIR,
    SPARK_DAEMON_HEAP,
    SPARK_MASTER_PORT,
    SPARK_MASTER_URL,
    SPARK_MASTER_WEBUI_PORT,
    SPARK_MASTER_WEBUI_URL,
    SPARK_WORKER_CORES,
    SPARK_WORKER_MEMORY,
    SPARK_WORKER_PORT,
    SPARK_WORKER_WEBUI_PORT,
    SPARK_WORKERS,
    StackError,
)


def cluster_state() -> dict:
    """The master's view (its web UI's JSON): workers, apps, ..."""
    r = requests.get(f"{SPARK_MASTER_WEBUI_URL}/json/", timeout=3)
    r.raise_for_status()
    return r.json()


def alive_worker_ports() -> set[int]:
    return {w["port"] for w in cluster_state().get("workers", []) if w.get("state") == "ALIVE"}


def worker_port(n: int) -> int:
    return SPARK_WORKER_PORT + n - 1


def cluster_workers() -> list[dict]:
    """The workers the master knows of (ALIVE and DEAD ones): id, host, port, state, cores, coresused, ..."""
    return cluster_state().get("workers", [])


class Daemon(Component):
    """A master's or a worker's JVM, started by spark-class with a properties file of its own: the file's path in
    its command line tells its pid from a reused one."""

    stop_timeout = 30

    def __init__(self, name: str, title: str, main: str, args: Sequence[str], properties: dict[str, str]):
        self.name, self.title, self.main, self.args, self.properties = name, title, main, args, properties

    def conf(self) -> Path:
        """The properties file it is started with."""
        return CONF_DIR / "cluster" / f"{self.name}.properties"

    def marker(self) -> str:
        return str(self.conf())

    def start(self) -> bool:
        if self.pid():
            return False
        conf = self.conf()
        conf.parent.mkdir(parents=True, exist_ok=True)
        conf.write_text("# written by the stack package (rewritten on every start)\n"
                        + "".join(f"{k}={v}\n" for k, v in self.properties.items()))
        local = CLUSTER_DIR / self.name.removeprefix("cluster-").replace("worker", "local")
        local.mkdir(parents=True, exist_ok=True)
        home = spark_home()
        env = {"SPARK_HOME": str(home), "SPARK_LOCAL_IP": HOST, "SPARK_LOCAL_HOSTNAME": HOST,
               "SPARK_LOG_DIR": str(LOG_DIR), "SPARK_LOCAL_DIRS": str(local),
               "SPARK_DAEMON_MEMORY": SPARK_DAEMON_HEAP,
               "SPARK_CONF_DIR": str(conf.parent),  # no spark-defaults.conf: nothing but what is given here
               # executors are started with the worker's environment: no Python to be found, no project on a path
               "PYSPARK_PYTHON": CLUSTER_PYTHON, "PYSPARK_DRIVER_PYTHON": CLUSTER_PYTHON}
        spawn(self.name, [str(home / "bin" / "spark-class"), self.main, *self.args, "--properties-file", str(conf)],
              env=env, unset=("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH",
                              "PYSPARK_SUBMIT_ARGS", "SPARK_DAEMON_JAVA_OPTS"))
        return True


class Worker(Daemon):
    """Worker ``n`` (1..SPARK_WORKERS); ready once the master counts it ALIVE."""

    def __init__(self, n: int):
        self.n = n
        work = CLUSTER_DIR / f"work{n}"
        super().__init__(
            f"cluster-worker{n}", f"Spark worker {n}", "org.apache.spark.deploy.worker.Worker",
            [SPARK_MASTER_URL, "--host", HOST, "--port", str(worker_port(n)),
             "--webui-port", str(SPARK_WORKER_WEBUI_PORT + n - 1), "--cores", str(SPARK_WORKER_CORES),
             "--memory", SPARK_WORKER_MEMORY, "--work-dir", str(work)],
            # finished applications' dirs (their jars, executor logs) go after a day
            {"spark.worker.cleanup.enabled": "true", "spark.worker.cleanup.appDataTtl": "86400"})
        self.work = work

    @property
    def address(self) -> str:
        return f"{HOST}:{worker_port(self.n)}"

    def start(self) -> bool:
        if self.pid():
            return False
        self.work.mkdir(parents=True, exist_ok=True)
        log(f"starting Spark worker {self.n} on {HOST}:{worker_port(self.n)} ({SPARK_WORKER_CORES} core(s), "
            f"{SPARK_WORKER_MEMORY}; PYSPARK_PYTHON={CLUSTER_PYTHON})")
        return super().start()

    def ready(self) -> bool:
        return worker_port(self.n) in alive_worker_ports()

    def waiting_for(self) -> str:
        return f"Spark worker {self.n} to register"


class Master(Daemon):
    def __init__(self):
        super().__init__(
            "cluster-master", "the Spark master", "org.apache.spark.deploy.master.Master",
            ["--host", HOST, "--port", str(SPARK_MASTER_PORT), "--webui-port", str(SPARK_MASTER_WEBUI_PORT)],
            {"spark.master.rest.enabled": "false", "spark.ui.reverseProxy": "false",
             # a worker that stopped answering without closing its connection is given up on after this
             "spark.worker.timeout": "15"})

    @property
    def address(self) -> str:
        return f"{SPARK_MASTER_URL} (UI {SPARK_MASTER_WEBUI_URL})"

    def start(self) -> bool:
        if self.pid():
            return False
        log(f"starting the Spark master on {SPARK_MASTER_URL} (web UI {SPARK_MASTER_WEBUI_URL})")
        return super().start()

    def ready(self) -> bool:
        cluster_state()
        return True


MASTER = Master()
WORKERS = {n: Worker(n) for n in range(1, SPARK_WORKERS + 1)}


def _worker(n: int) -> Worker:
    if n not in WORKERS:
        raise StackError(f"no worker {n}: the stack's cluster has workers 1..{SPARK_WORKERS}")
    return WORKERS[n]


class Cluster(Component):
    """The master and its workers as one component: ready once the master shows all the workers ALIVE."""

    name, title = "cluster", "the Spark cluster"
    stop_timeout = 30

    @property
    def address(self) -> str:
        return MASTER.address

    def pid(self) -> int | None:
        return MASTER.pid()

    def logs(self) -> Path:
        return MASTER.logs()

    def start(self) -> bool:
        started = MASTER.start()
        for worker in WORKERS.values():
            started = worker.start() or started
        return started

    def ready(self) -> bool:
        """The master answers and shows all the stack's workers ALIVE."""
        ports = alive_worker_ports()
        return all(worker_port(n) in ports for n in WORKERS)

    def waiting_for(self) -> str:
        return f"the Spark master {SPARK_MASTER_URL} with {SPARK_WORKERS} ALIVE workers"

    def died(self) -> str | None:
        for daemon in [MASTER, *WORKERS.values()]:
            err = daemon.died()
            if err:
                return err
        return None

    def stop(self, timeout: float | None = None) -> None:
        timeout = self.stop_timeout if timeout is None else timeout
        for worker in WORKERS.values():
            worker.stop(timeout)
        MASTER.stop(timeout)

    def status(self) -> dict:
        return {**super().status(), "workers": {n: worker.pid() for n, worker in WORKERS.items()}}


SERVICE = Cluster()


def kill_worker(n: int, executors: bool = True, timeout: float = 30) -> None:
    """kill -9 worker ``n`` (1 or 2) as in a machine loss: its JVM and, with ``executors``, the executor JVMs it
    started (without, they exit by themselves once their worker is gone). Returns once the master no longer
    counts it ALIVE."""
    worker = _worker(n)
    pid = worker.pid()
    if not pid:
        return
    victims = [pid] + (descendants(pid) if executors else [])
    log(f"kill -9 Spark worker {n} (pid {pid}" + (f", its processes {victims[1:]})" if victims[1:] else ")"))
    for victim in victims:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    poll(lambda: not any(pid_alive(v) for v in victims), timeout, f"Spark worker {n} to die")
    pidfile(worker.name).unlink(missing_ok=True)
    poll(lambda: worker_port(n) not in alive_worker_ports(), timeout, f"the master to drop worker {n}")


def start_worker(n: int, timeout: float = 60) -> None:
    """Start worker ``n`` (after kill_worker or stop_worker) and wait until the master counts it ALIVE."""
    worker = _worker(n)
    worker.start()
    worker.wait(timeout)


def stop_worker(n: int, timeout: float = 30) -> None:
    """Stop worker ``n`` cleanly (it stops its executors)."""
    _worker(n).stop(timeout)


def stop_cluster(timeout: float = 30) -> None:
    SERVICE.stop(timeout)


def spark_submit_command(*, executor_memory: str = "1g", driver_memory: str | None = None,
                         java_options: str | None = None, jars: list[str] | None = None, cores: int | None = None,
                         conf: dict[str, str] | None = None, driver_class_path: bool = True) -> list[str]:
    """spark-submit in client mode on the stack's cluster, up to the application's file: the s3a jars on the
    driver's and executors' class paths (never --jars: the AWS SDK bundle is ~650 MB, copied to every executor),
    Python on the driver only (the executors get CLUSTER_PYTHON), loopback; `java_options` for the driver and the
    executors, `jars` by --jars, `cores`: spark.cores.max (None: all the cluster's), `conf` added last.
    `driver_class_path=False`: the caller gives the driver the s3a jars by SPARK_DIST_CLASSPATH, after Spark's
    jars, where a JVM class archive made without them still matches the class path."""
    s3a = ":".join(s3a_jars())
    settings = {
        "spark.executor.extraClassPath": s3a,
        **({"spark.executor.extraJavaOptions": java_options} if java_options else {}),
        "spark.executor.memory": executor_memory,
        "spark.pyspark.driver.python": sys.executable,
        "spark.pyspark.python": CLUSTER_PYTHON,
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.ui.enabled": "false",
        **({"spark.cores.max": str(cores)} if cores else {}),
        **(conf or {}),
    }
    return [str(spark_home() / "bin" / "spark-submit"), "--master", SPARK_MASTER_URL, "--deploy-mode", "client",
            *(["--driver-class-path", s3a] if driver_class_path else []),
            *(["--driver-memory", driver_memory] if driver_memory else []),
            *(["--driver-java-options", java_options] if java_options else []),
            *(["--jars", ",".join(jars)] if jars else []),
            *[arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}")]]

