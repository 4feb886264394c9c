"""The warehouse's files through Hadoop's FileSystem, so local, HDFS and S3 behave alike: small file
operations, state kept as write-once numbered JSON files, and the exclusive lock file of a job."""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lakecompact.config import LocksConfig
from lakecompact.errors import LockHeld
from lakecompact.report import warn
from lakecompact.spark import jvm_class

UNWRITTEN_LOCK_SECONDS = 60.0  # a holder writes its name right after creating the file


class Storage:
    """Small, explicit file operations; every path is a Hadoop URI string."""

    def __init__(self, spark: SparkSession, root: str):
        self._spark = spark
        self._path_class = jvm_class(spark, "org.apache.hadoop.fs.Path")
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.root = root.rstrip("/")
        self._fs = self._path(self.root).getFileSystem(self._conf)

    def _path(self, path: str):
        return self._path_class(path)

    def exists(self, path: str) -> bool:
        return self._fs.exists(self._path(path))

    def mkdirs(self, path: str) -> None:
        self._fs.mkdirs(self._path(path))

    def delete(self, path: str) -> bool:
        return self._fs.delete(self._path(path), True)

    def rename(self, source: str, target: str) -> None:
        parent = target.rsplit("/", 1)[0]
        self.mkdirs(parent)
        if not self._fs.rename(self._path(source), self._path(target)):
            raise OSError(f"could not move {source} to {target}")

    def list_names(self, path: str) -> list[str]:
        """Names directly under path (files and folders), sorted; [] when path does not exist."""
        if not self.exists(path):
            return []
        return sorted(status.getPath().getName() for status in self._fs.listStatus(self._path(path)))

    def list_files(self, pattern: str) -> list[tuple[str, int]]:
        """(URI, size) of the files matching a glob, sorted by URI."""
        statuses = self._fs.globStatus(self._path(pattern)) or []
        return sorted((s.getPath().toString(), s.getLen()) for s in statuses if s.isFile())

    def size(self, path: str) -> int:
        return self._fs.getFileStatus(self._path(path)).getLen()

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._path(path))
        try:
            reader = jvm_class(self._spark, "java.io.BufferedReader")(
                jvm_class(self._spark, "java.io.InputStreamReader")(stream, "UTF-8")
            )
            return "\n".join(iter(reader.readLine, None))
        finally:
            stream.close()

    def byte_at(self, path: str, position: int) -> int:
        """The byte (0-255) at a position inside a file."""
        stream = self._fs.open(self._path(path))
        try:
            stream.seek(position)
            return stream.read()
        finally:
            stream.close()

    def write_text(self, path: str, text: str, *, overwrite: bool = False) -> None:
        """Write a whole small file. With overwrite=True it is written beside its place and renamed into it, so
        that a reader, or the next run after a crash, finds the old file or the whole new one, never a part.
        With overwrite=False an existing file is an error: the create is exclusive (lock files; see
        exclusive_lock for a crash between the create and the write)."""
        if not overwrite:
            self._create(path, text, overwrite=False)
            return
        parent, name = path.rsplit("/", 1)
        scratch = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"  # a leading dot: no reader lists it
        self._create(scratch, text, overwrite=True)
        # a local file system replaces the target in one rename; HDFS refuses an existing target
        if not self._fs.rename(self._path(scratch), self._path(path)):
            self.delete(path)
            self.rename(scratch, path)

    def _create(self, path: str, text: str, *, overwrite: bool) -> None:
        stream = self._fs.create(self._path(path), overwrite)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def touch(self, path: str) -> None:
        """Set the file's modification time to now (a lock's lease renewed), leaving its content alone."""
        self._fs.setTimes(self._path(path), int(time.time() * 1000), -1)

    def age_seconds(self, path: str) -> float:
        """Seconds since the file was last written."""
        modified = self._fs.getFileStatus(self._path(path)).getModificationTime() / 1000
        return max(0.0, time.time() - modified)

    def read_json(self, path: str) -> Any:
        return json.loads(self.read_text(path))

    def write_json(self, path: str, value: Any, *, overwrite: bool = False) -> None:
        self.write_text(path, json.dumps(value, indent=1, sort_keys=True), overwrite=overwrite)


class LocalFiles:
    """The reading half of Storage for a warehouse on the local disk, without a JVM: commands that only read
    the lake's state files (`history`) answer in well under a second."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")

    @staticmethod
    def is_local(root: str) -> bool:
        return root.startswith("file:") or "://" not in root

    @staticmethod
    def local_path(path: str) -> Path:
        """The local path of a file: URI or a plain path."""
        return Path(re.sub(r"^file:(//)?", "", path))

    def exists(self, path: str) -> bool:
        return self.local_path(path).exists()

    def list_names(self, path: str) -> list[str]:
        folder = self.local_path(path)
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def read_text(self, path: str) -> str:
        return self.local_path(path).read_text(encoding="utf-8")

    def read_json(self, path: str) -> Any:
        return json.loads(self.read_text(path))


def folder_stats(folder: str) -> str:
    """The small JSON file of counts kept in a folder of parquet files (an increment, a quarantine batch), for
    `status` to read without Spark; readers of the parquet skip it (its name starts with `_`)."""
    return f"{folder}/_lakecompact.json"


class VersionedState:
    """State kept as write-once numbered files (<n>.json), the highest number being current.

    A file is written whole (beside its place, then renamed into it) and then never changed, so a crash leaves
    either the old or the new state, on any file system.
    """

    def __init__(self, storage: Storage, folder: str):
        self.storage, self.folder = storage, folder

    def path(self, number: int) -> str:
        return f"{self.folder}/{number:012d}.json"

    def numbers(self) -> list[int]:
        names = self.storage.list_names(self.folder)
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def read(self, number: int) -> Any:
        return self.storage.read_json(self.path(number))

    def latest(self) -> tuple[int, Any]:
        numbers = self.numbers()
        if not numbers:
            return 0, None
        return numbers[-1], self.read(numbers[-1])

    def write(self, number: int, value: Any) -> None:
        self.storage.write_json(self.path(number), value, overwrite=True)

    def delete(self, number: int) -> None:
        self.storage.delete(self.path(number))

    def prune(self, keep: int) -> None:
        for number in self.numbers()[:-keep]:
            self.delete(number)


@contextmanager
def exclusive_lock(storage: Storage, path: str, subject: str, *, lease_seconds: float = LocksConfig.lease_seconds):
    """One job at a time where it matters (a table's compactor, the lake's lander): an exclusive lock file.

    `subject` says what the holder does, e.g. "table t is being compacted". The holder renews its lease (the
    file's modification time) every quarter of `lease_seconds`. A lock is taken over, with a warning, when its
    holder ran on this host and its process is gone (killed, say), or ran on another host and has not renewed
    it for `lease_seconds`; a live holder's lock on this host is never touched.
    """
    owner = f"pid {os.getpid()} on {socket.gethostname()} by {getpass.getuser()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S}Z"
    held_by = _try_lock(storage, path, owner)
    gone = held_by is not None and _why_stale(held_by, storage, path, lease_seconds)
    if gone:
        warn(f"{path} was left by a process that {gone} ({held_by}); taking it over")
        if _holder(storage, path) == held_by:  # nobody took it over meanwhile
            storage.delete(path)
        held_by = _try_lock(storage, path, owner)
    if held_by is not None:
        raise LockHeld(subject, path, held_by)
    renewal = _LeaseRenewal(storage, path, owner, lease_seconds / 4)
    renewal.start()
    try:
        yield
    finally:
        renewal.stop()
        if _holder(storage, path) == owner:  # else another job took it over: its lock now, not ours to remove
            storage.delete(path)


class _LeaseRenewal(threading.Thread):
    """Touches the lock file while its job runs, so that other hosts see the holder is alive."""

    def __init__(self, storage: Storage, path: str, owner: str, every_seconds: float):
        super().__init__(name=f"lease {path}", daemon=True)
        self.storage, self.path, self.owner, self.every_seconds = storage, path, owner, every_seconds
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self.every_seconds):
            try:
                if _holder(self.storage, self.path) != self.owner:
                    warn(f"{self.path} was taken over by another job while this one held it (its lease was not "
                         "renewed in time: was this process paused?)")
                    return
                self.storage.touch(self.path)
            except Exception as exc:  # noqa: BLE001 - the next round tries again; the job itself goes on
                if self._stopped.is_set():
                    return
                warn(f"could not renew the lease of {self.path}: {exc}".splitlines()[0])

    def stop(self) -> None:
        self._stopped.set()
        self.join()


def _holder(storage: Storage, path: str) -> str | None:
    """What the lock file says (None: there is none, or it cannot be read)."""
    try:
        return storage.read_text(path)
    except Exception:  # noqa: BLE001 - removed meanwhile (a Py4J FileNotFoundException)
        return None


def _try_lock(storage: Storage, path: str, owner: str) -> str | None:
    """Create the lock file (exclusively); None when this process holds it now, else who holds it."""
    try:
        storage.write_text(path, owner, overwrite=False)
        return None
    except Exception as exc:  # Hadoop's FileAlreadyExistsException arrives as a Py4J error
        if "already exists" not in str(exc).lower() and not storage.exists(path):
            raise
    held_by = _holder(storage, path)
    return "unknown" if held_by is None else held_by  # removed meanwhile, or unreadable: held, by whom is unknown


def _why_stale(held_by: str, storage: Storage, path: str, lease_seconds: float) -> str:
    """Why the holder is taken to be gone ("" while it may be alive): it ran on this host and its process is
    gone; it ran on another host and its lease has not been renewed for `lease_seconds`; or the lock names no
    holder at all, long after it was created (its process was killed between creating the file and writing its
    name in it)."""
    try:
        age = storage.age_seconds(path)
    except Exception:  # noqa: BLE001 - removed meanwhile: try again
        return "is gone"
    match = _OWNER.match(held_by)
    if match is None:
        return "never wrote its name" if held_by != "unknown" and age > UNWRITTEN_LOCK_SECONDS else ""
    if match["host"] != socket.gethostname():
        return f"has not renewed its lease for {age:.0f} s" if age > lease_seconds else ""
    try:
        os.kill(int(match["pid"]), 0)
    except ProcessLookupError:
        return "is gone"
    except PermissionError:  # alive, another user's
        return ""
    return ""


_OWNER = re.compile(r"^pid (?P<pid>\d+) on (?P<host>\S+) ")
