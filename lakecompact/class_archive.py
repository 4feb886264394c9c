"""A class-data-sharing (CDS) archive of the classes Spark loads, so that each command's JVM starts faster.

A new JVM per command loads and verifies some 20,000 classes before it lands a row: about a third of a small
command's time on two cores. Java 17 can dump the classes a run loaded into an archive (`-XX:ArchiveClassesAtExit`)
that later JVMs map instead (`-XX:SharedArchiveFile`), skipping most of that work. `lakecompact class-archive`
(scripts/setup.sh runs it) builds one by
running the demo once; without one, everything works as before, only slower to start. A driver JVM that
spark-submit starts maps it only when given the option `class-archive` prints (for_spark_submit).

The JVM checks an archive against its own build and class path and skips one that does not match; a damaged
file, however, aborts it. So an archive is validated before it is renamed into place, and used only while its
size is the one recorded then.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from lakecompact.report import say, seconds_since, warn

# a JVM that skips an archive (another JDK or class path) would say so on every start
QUIET = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")
PREFIX = "spark-classes-"
PARTIAL = ".partial"


def cache_dir() -> Path:
    """LAKECOMPACT_CACHE, else the XDG cache folder."""
    if os.environ.get("LAKECOMPACT_CACHE"):
        return Path(os.environ["LAKECOMPACT_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lakecompact"


def java_binary() -> str:
    """The java that spark-submit starts: JAVA_HOME's, else the one on PATH."""
    if os.environ.get("JAVA_HOME"):
        return str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    return shutil.which("java") or "java"


def archive_path() -> Path:
    """One archive per JDK and Spark installation: a new one of either gets its own."""
    import pyspark

    java, spark_home = _installation()
    stamp = f"{java}:{_mtime(java)}:{spark_home}:{pyspark.__version__}"
    return cache_dir() / f"{PREFIX}{pyspark.__version__}-{hashlib.sha1(stamp.encode()).hexdigest()[:12]}.jsa"


def _installation() -> tuple[Path, Path]:
    """The JDK and the Spark installation an archive is made for."""
    import pyspark

    return Path(java_binary()).resolve(), Path(pyspark.__file__).resolve().parent


def java_options() -> list[str]:
    """The options that map the archive into a new JVM; none when there is no usable archive."""
    path = archive_path()
    return [f"-XX:SharedArchiveFile={path}", *QUIET] if _usable(path) else []


def for_spark_submit(path: Path) -> str:
    """What a spark-submit adds for its driver's JVM to map the archive: spark-submit starts that JVM with none of
    lakecompact's options. The JVM maps it only under the JDK and beside the Spark jars it was made with, on a class
    path that starts as it did then; otherwise it starts without, saying "Unable to use shared archive"."""
    java, spark_home = _installation()
    option = shlex.join(["--driver-java-options", f"-XX:SharedArchiveFile={path}"])
    return (f"class archive: for spark-submit ({spark_home / 'bin' / 'spark-submit'} on {java}, this SPARK_CONF_DIR, "
            f"jars by --packages, --jars or SPARK_DIST_CLASSPATH, not --driver-class-path; docs/production.md \"The "
            f"class archive under spark-submit\"), add:\n  {option}")


def build(workload: Callable[[tuple[str, ...]], str]) -> Path | None:
    """Run `workload` with the options of a JVM that dumps its classes as it exits; it returns that JVM's class
    path once the JVM has exited (stop_jvm). The dump is put in place only if a JVM on that class path maps it.
    None when there is none to be had: commands then start without."""
    path = archive_path()
    if _usable(path):
        if not _source_file(path).exists():  # made before archives recorded their installation
            _record_installation(path)
        say(f"class archive: present ({path})")
        return path
    started = time.monotonic()
    say("class archive: building one for faster JVM starts (runs the demo once, about two minutes)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(path)
        dump = path.with_name(f"{path.name}.{os.getpid()}{PARTIAL}")
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            class_path = workload((f"-XX:ArchiveClassesAtExit={dump}", *QUIET))
        if not _loads(dump, class_path):
            dump.unlink(missing_ok=True)
            warn("class archive: a JVM could not map the one just written; commands start without it")
            return None
        _size_file(path).write_text(str(dump.stat().st_size))
        _record_installation(path)
        dump.replace(path)
    except (OSError, subprocess.SubprocessError) as exc:
        warn(f"class archive: not built ({exc}); commands start without it")
        return None
    say(f"class archive: built in {seconds_since(started)} ({path.stat().st_size // 2**20} MB, {path})")
    return path


def stop_jvm() -> str:
    """Stop Spark and wait for its JVM to exit (it writes the archive as it exits); its class path."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    class_path = SparkContext._jvm.java.lang.System.getProperty("java.class.path")
    gateway.proc.stdin.close()  # the JVM exits when its stdin closes
    gateway.proc.wait(timeout=300)
    SparkContext._gateway = SparkContext._jvm = None
    return class_path


def _loads(archive: Path, class_path: str) -> bool:
    """A JVM on that class path starts with it mapped (-Xshare:on: or not at all)."""
    result = subprocess.run(
        [java_binary(), *(["-cp", class_path] if class_path else []), f"-XX:SharedArchiveFile={archive}",
         "-Xshare:on", *QUIET, f"-XX:ErrorFile={os.devnull}", "-version"],  # a damaged one: no hs_err file left
        capture_output=True, check=False, timeout=60,
    )
    return result.returncode == 0


def _usable(path: Path) -> bool:
    try:
        return path.stat().st_size == int(_size_file(path).read_text())
    except (OSError, ValueError):
        return False


def _size_file(path: Path) -> Path:
    return path.with_name(f"{path.name}.size")


def _source_file(path: Path) -> Path:
    """The JDK and Spark installation the archive was made for, a path a line."""
    return path.with_name(f"{path.name}.source")


def _mtime(path: Path) -> int:
    try:
        return int(path.stat().st_mtime)
    except OSError:
        return 0


def _remove_stale(keep: Path) -> None:
    """Dumps of builds that died (200 MB each), and the archives of a JDK or Spark no longer installed here or made
    for this installation before it changed. Another installation's archive stays: two environments (a venv with
    another pyspark) share the cache folder, and each would otherwise delete the other's at every build."""
    mine = [str(p) for p in _installation()]
    for other in keep.parent.glob(f"{PREFIX}*"):
        if other.name.endswith(PARTIAL):
            if time.time() - _mtime(other) >= 3600:  # younger: another build may be writing it
                other.unlink(missing_ok=True)
        elif other.suffix in (".size", ".source"):
            if not other.with_suffix("").exists():
                other.unlink(missing_ok=True)
        elif other != keep and not _of_another_installation(other, mine):
            for path in (other, _size_file(other), _source_file(other)):
                path.unlink(missing_ok=True)


def _record_installation(archive: Path) -> None:
    _source_file(archive).write_text("\n".join(map(str, _installation())))


def _of_another_installation(archive: Path, mine: list[str]) -> bool:
    try:
        made_for = _source_file(archive).read_text().splitlines()
    except OSError:
        return False
    return made_for != mine and len(made_for) == 2 and all(Path(p).exists() for p in made_for)
