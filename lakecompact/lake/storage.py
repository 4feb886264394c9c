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

from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession

from lakecompact.config import LocksConfig
from lakecompact.errors import LakecompactError, LockHeld
from lakecompact.report import warn
from lakecompact.spark import jvm_class

UNWRITTEN_LOCK_SECONDS = 60.0  # a holder writes its name right after creating the file
# stores whose folders are key prefixes: a folder's rename copies each object, so none is atomic (and HDFS's
# rename of a file over an existing one fails, where a store's PUT replaces it whole)
OBJECT_STORE_SCHEMES = frozenset({"s3a", "s3", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "cosn", "obs"})


# Hadoop's option for a create that the store refuses when the object exists (S3A: If-None-Match, since 3.4.2)
CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite"
# S3A's option for a create without its probes (a LIST for a folder at the key, the overwrite flag's check): a
# whole-object PUT that replaces what is there needs neither
CREATE_PERFORMANCE = "fs.s3a.create.performance"


def _precondition_failed(error: Py4JJavaError) -> bool:
    """The store refused a conditional write because the object exists: S3's 412 (S3A's RemoteFileChangedException),
    or the 409 AWS answers when two conditional writes of one key race."""
    text = str(error)
    return "RemoteFileChangedException" in text or "ConditionalRequestConflict" in text


def _conditional_writes_refused(error: Py4JJavaError) -> bool:
    """S3A with conditional writes switched off, or a store that answers 501 Not Implemented to one."""
    text = str(error)
    return "Conditional Writes Unavailable" in text or "501" in text or "NotImplemented" in text


class ConditionalWritesUnavailable(LakecompactError):
    """The warehouse's object store refused a conditional write, which its locks are made of."""

    def __init__(self, root: str, what: str):
        super().__init__(
            f"the object store of {root} does not take conditional writes ({what}); "
            "lakecompact's locks need conditional PUTs (If-None-Match), which AWS S3, and stores such as s3proxy 4 "
            "and MinIO, take: expected such a store (and fs.s3a.create.conditional.enabled left true)"
        )


def is_object_store(uri: str) -> bool:
    return uri.split("://", 1)[0].lower() in OBJECT_STORE_SCHEMES if "://" in uri else False


class Storage:
    """Small, explicit file operations; every path is a Hadoop URI string, on whichever file system it names
    (event files on the local disk beside a warehouse on S3)."""

    def __init__(self, spark: SparkSession, root: str):
        self._spark = spark
        self._path_class = jvm_class(spark, "org.apache.hadoop.fs.Path")
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.root = root.rstrip("/")
        self._file_systems: dict[str, Any] = {}
        self._conditional_writes_checked = False
        self._not_found = spark._jvm.java.lang.Class.forName("java.io.FileNotFoundException")

    def _path(self, path: str):
        return self._path_class(path)

    def _fs(self, path: str):
        """The file system of a path (its scheme and authority), each looked up once."""
        prefix = path.split("/", 3)[:3] if "://" in path else ["file:"]
        key = "/".join(prefix)
        if key not in self._file_systems:
            self._file_systems[key] = self._path(path).getFileSystem(self._conf)
        return self._file_systems[key]

    def exists(self, path: str) -> bool:
        return self._fs(path).exists(self._path(path))

    def mkdirs(self, path: str) -> None:
        self._fs(path).mkdirs(self._path(path))

    def delete(self, path: str) -> bool:
        return self._fs(path).delete(self._path(path), True)

    def rename(self, source: str, target: str) -> None:
        """Move a file (or, where the file system renames folders atomically, a folder). On an object store a
        folder's rename is a copy of every object, visible in part while it runs: refused, so that no protocol
        relies on one there (docs/design.md "On object stores")."""
        if is_object_store(source) and self._fs(source).getFileStatus(self._path(source)).isDirectory():
            raise OSError(f"will not move the folder {source} on an object store (a copy of every object in it)")
        parent = target.rsplit("/", 1)[0]
        self.mkdirs(parent)
        if not self._fs(source).rename(self._path(source), self._path(target)):
            raise OSError(f"could not move {source} to {target}")

    def _missing(self, error: Py4JJavaError) -> bool:
        return self._not_found.isInstance(error.java_exception)

    def list_names(self, path: str) -> list[str]:
        """Names directly under path (files and folders), sorted; [] when path does not exist. One listing, no
        probe first: on an object store a probe of a folder is two more requests."""
        try:
            statuses = self._fs(path).listStatus(self._path(path))
        except Py4JJavaError as error:
            if self._missing(error):
                return []
            raise
        return sorted(status.getPath().getName() for status in statuses)

    def list_files(self, pattern: str) -> list[tuple[str, int]]:
        """(URI, size) of the files matching a glob, sorted by URI."""
        statuses = self._fs(pattern).globStatus(self._path(pattern)) or []
        return sorted((s.getPath().toString(), s.getLen()) for s in statuses if s.isFile())

    def size(self, path: str) -> int:
        return self._fs(path).getFileStatus(self._path(path)).getLen()

    def read_text(self, path: str) -> str:
        stream = self._fs(path).open(self._path(path))
        try:
            reader = jvm_class(self._spark, "java.io.BufferedReader")(
                jvm_class(self._spark, "java.io.InputStreamReader")(stream, "UTF-8")
            )
            return "\n".join(iter(reader.readLine, None))
        finally:
            stream.close()

    def byte_at(self, path: str, position: int) -> int:
        """The byte (0-255) at a position inside a file."""
        stream = self._fs(path).open(self._path(path))
        try:
            stream.seek(position)
            return stream.read()
        finally:
            stream.close()

    def write_text(self, path: str, text: str, *, overwrite: bool = False) -> None:
        """Write a whole small file, so that a reader, or the next run after a crash, finds the old file or the
        whole new one, never a part: on an object store one PUT, which replaces an object whole; elsewhere
        written beside its place and renamed into it. With overwrite=False an existing file is an error."""
        if not overwrite or is_object_store(path):
            self._create(path, text, overwrite=overwrite)
            return
        parent, name = path.rsplit("/", 1)
        scratch = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"  # a leading dot: no reader lists it
        self._create(scratch, text, overwrite=True)
        # a local file system replaces the target in one rename; HDFS refuses an existing target
        if not self._fs(path).rename(self._path(scratch), self._path(path)):
            self.delete(path)
            self.rename(scratch, path)

    def create_exclusive(self, path: str, text: str) -> bool:
        """Create a small object only if none is there yet, in one conditional PUT (`If-None-Match: *`), which the
        store decides atomically; False when one is there. For object stores: the first call checks that the
        store honours the condition (one that ignores it would let two jobs hold one lock)."""
        if not self._conditional_writes_checked:
            self._conditional_writes_checked = True
            probe = f"{path.rsplit('/', 1)[0]}/.conditional-write-probe-{uuid.uuid4().hex}"
            try:
                if self.create_exclusive(probe, "1") and self.create_exclusive(probe, "2"):
                    raise ConditionalWritesUnavailable(self.root, "it replaced an object that a conditional PUT "
                                                       "(If-None-Match: *) was to leave alone")
            finally:
                self.delete(probe)
        try:
            stream = self._fs(path).createFile(self._path(path)).overwrite(False).must(CONDITIONAL_CREATE, True).build()
            stream.write(bytearray(text.encode("utf-8")))
            stream.close()  # the PUT, and the store's answer
        except Py4JJavaError as error:
            if _precondition_failed(error):
                return False
            if _conditional_writes_refused(error):
                raise ConditionalWritesUnavailable(self.root, str(error).strip().splitlines()[0][:200]) from None
            raise
        return True

    def _create(self, path: str, text: str, *, overwrite: bool) -> None:
        if overwrite and is_object_store(path):
            stream = (self._fs(path).createFile(self._path(path)).overwrite(True).recursive()
                      .opt(CREATE_PERFORMANCE, True).build())
        else:
            stream = self._fs(path).create(self._path(path), overwrite)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def touch(self, path: str) -> None:
        """Set the file's modification time to now (a lock's lease renewed), leaving its content alone."""
        self._fs(path).setTimes(self._path(path), int(time.time() * 1000), -1)

    def age_seconds(self, path: str) -> float:
        """Seconds since the file was last written."""
        modified = self._fs(path).getFileStatus(self._path(path)).getModificationTime() / 1000
        return max(0.0, time.time() - modified)

    def read_json(self, path: str) -> Any:
        return json.loads(self.read_text(path))

    def read_json_or_none(self, path: str) -> Any:
        """The file's JSON, None when there is no such file: one read, no probe first."""
        try:
            return self.read_json(path)
        except Py4JJavaError as error:
            if self._missing(error):
                return None
            raise

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

    def read_json_or_none(self, path: str) -> Any:
        return self.read_json(path) if self.exists(path) else None


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
    """One job at a time where it matters (a table's compactor, the lake's lander): an exclusive lock.

    `subject` says what the holder does, e.g. "table t is being compacted". The holder renews its lease every
    quarter of `lease_seconds`. A lock is taken over, with a warning, when its holder ran on this host and its
    process is gone (killed, say), or ran on another host and has not renewed it for `lease_seconds`; a live
    holder's lock on this host is never touched. On a file system the lock is a file created exclusively whose
    modification time is the lease; on an object store, which has neither, a series of objects each created
    only if it does not exist yet (docs/production.md "Locks").
    """
    lock = _GenerationLock(storage, path) if is_object_store(path) else _FileLock(storage, path)
    owner = f"pid {os.getpid()} on {socket.gethostname()} by {getpass.getuser()} since {datetime.now(UTC):%Y-%m-%d %H:%M:%S}Z"
    held_by = lock.take(owner)
    gone = held_by is not None and _why_stale(held_by, lock.age_seconds(), lease_seconds)
    if gone:
        warn(f"{path} was left by a process that {gone} ({held_by}); taking it over")
        held_by = lock.take_over(owner, held_by)
    if held_by is not None:
        raise LockHeld(subject, path, held_by)
    renewal = _LeaseRenewal(lock, owner, lease_seconds / 4)
    renewal.start()
    try:
        yield
    finally:
        renewal.stop()
        lock.release(owner)  # unless another job took it over: its lock now, not ours to remove


def lock_holder(storage: Storage, path: str) -> str | None:
    """Who holds the lock at `path` (None: nobody; "unknown": held, by whom cannot be read)."""
    lock = _GenerationLock(storage, path) if is_object_store(path) else _FileLock(storage, path)
    return lock.holder()


class _FileLock:
    """A file created exclusively, holding its owner's name; its modification time is the lease."""

    def __init__(self, storage: Storage, path: str):
        self.storage, self.path = storage, path

    def holder(self) -> str | None:
        try:
            return self.storage.read_text(self.path)
        except Exception:  # noqa: BLE001 - removed meanwhile (a Py4J FileNotFoundException)
            return None

    def take(self, owner: str) -> str | None:
        """None when this process holds the lock now, else who holds it."""
        try:
            self.storage.write_text(self.path, owner, overwrite=False)
            return None
        except Exception as exc:  # Hadoop's FileAlreadyExistsException arrives as a Py4J error
            if "already exists" not in str(exc).lower() and not self.storage.exists(self.path):
                raise
        held_by = self.holder()
        return "unknown" if held_by is None else held_by  # removed meanwhile, or unreadable: held, by whom is unknown

    def age_seconds(self) -> float | None:
        try:
            return self.storage.age_seconds(self.path)
        except Exception:  # noqa: BLE001 - removed meanwhile
            return None

    def take_over(self, owner: str, held_by: str) -> str | None:
        if self.holder() == held_by:  # nobody took it over meanwhile
            self.storage.delete(self.path)
        return self.take(owner)

    def renew(self, owner: str) -> bool:
        if self.holder() != owner:
            return False
        self.storage.touch(self.path)
        return True

    def release(self, owner: str) -> None:
        if self.holder() == owner:
            self.storage.delete(self.path)


class _GenerationLock:
    """A lock on an object store: numbered objects under `path`, the highest one current, each created only if
    it does not exist yet (a conditional PUT, `If-None-Match: *`), so of two jobs that create the same number
    one wins. Taking, renewing, taking over and releasing each create the next number (the lease is the current
    object's time); releasing writes RELEASED. Numbers are never reused, so a job that judged an old number
    stale cannot take the lock from one that renewed it since."""

    def __init__(self, storage: Storage, path: str):
        self.storage, self.path = storage, path

    def _numbers(self) -> list[int]:
        return sorted(int(name) for name in self.storage.list_names(self.path) if name.isdigit())

    def _object(self, number: int) -> str:
        return f"{self.path}/{number:012d}"

    def _current(self) -> tuple[int, str | None]:
        """The highest number and what it says (0, None: never taken)."""
        for number in reversed(self._numbers()):
            try:
                return number, self.storage.read_text(self._object(number))
            except Exception:  # noqa: BLE001, S112 - removed by its holder's next step: the one below or above is current
                continue
        return 0, None

    def holder(self) -> str | None:
        text = self._current()[1]
        return None if text in (None, RELEASED) else text

    def _advance(self, number: int, text: str) -> bool:
        """Create the next number; False when another job created it first. The numbers below go."""
        if not self.storage.create_exclusive(self._object(number + 1), text):
            return False
        for old in (n for n in self._numbers() if n <= number):
            self.storage.delete(self._object(old))
        return True

    def take(self, owner: str) -> str | None:
        number, text = self._current()
        if text not in (None, RELEASED):
            return text
        if self._advance(number, owner):
            return None
        return self.holder() or "unknown"

    def age_seconds(self) -> float | None:
        number, _ = self._current()
        try:
            return self.storage.age_seconds(self._object(number)) if number else None
        except Exception:  # noqa: BLE001 - renewed meanwhile
            return 0.0

    def take_over(self, owner: str, held_by: str) -> str | None:
        number, text = self._current()
        if text != held_by:  # renewed or taken meanwhile
            return text if text not in (None, RELEASED) else self.take(owner)
        if self._advance(number, owner):
            return None
        return self.holder() or "unknown"

    def renew(self, owner: str) -> bool:
        number, text = self._current()
        return text == owner and self._advance(number, owner)

    def release(self, owner: str) -> None:
        number, text = self._current()
        if text == owner:
            self._advance(number, RELEASED)


RELEASED = "released"  # what the current object of a lock on an object store says once its holder is done


class _LeaseRenewal(threading.Thread):
    """Renews the lock's lease while its job runs, so that other hosts see the holder is alive."""

    def __init__(self, lock: _FileLock | _GenerationLock, owner: str, every_seconds: float):
        super().__init__(name=f"lease {lock.path}", daemon=True)
        self.lock, self.owner, self.every_seconds = lock, owner, every_seconds
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.wait(self.every_seconds):
            try:
                if not self.lock.renew(self.owner):
                    warn(f"{self.lock.path} was taken over by another job while this one held it (its lease was not "
                         "renewed in time: was this process paused?)")
                    return
            except Exception as exc:  # noqa: BLE001 - the next round tries again; the job itself goes on
                if self._stopped.is_set():
                    return
                warn(f"could not renew the lease of {self.lock.path}: {exc}".splitlines()[0])

    def stop(self) -> None:
        self._stopped.set()
        self.join()


def _why_stale(held_by: str, age: float | None, lease_seconds: float) -> str:
    """Why the holder is taken to be gone ("" while it may be alive): it ran on this host and its process is
    gone; it ran on another host and its lease has not been renewed for `lease_seconds`; or the lock names no
    holder at all, long after it was created (its process was killed between creating the file and writing its
    name in it). `age`: seconds since the lease was renewed (None: the lock is gone)."""
    if age is None:
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
