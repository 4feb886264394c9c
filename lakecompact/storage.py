"""File operations on the warehouse through Hadoop's FileSystem, so local, HDFS and S3 behave alike."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession


class Storage:
    """Small, explicit file operations; every path is a Hadoop URI string."""

    def __init__(self, spark: SparkSession, root: str):
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()
        self.root = root.rstrip("/")
        self._fs = self._path(self.root).getFileSystem(self._conf)

    def _path(self, path: str):
        return self._jvm.org.apache.hadoop.fs.Path(path)

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

    def read_text(self, path: str) -> str:
        stream = self._fs.open(self._path(path))
        try:
            reader = self._jvm.java.io.BufferedReader(
                self._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            return "\n".join(iter(reader.readLine, None))
        finally:
            stream.close()

    def write_text(self, path: str, text: str, *, overwrite: bool = False) -> None:
        """Write a whole small file. With overwrite=False an existing file is an error: the create is exclusive."""
        stream = self._fs.create(self._path(path), overwrite)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def read_json(self, path: str) -> Any:
        return json.loads(self.read_text(path))

    def write_json(self, path: str, value: Any, *, overwrite: bool = False) -> None:
        self.write_text(path, json.dumps(value, indent=1, sort_keys=True), overwrite=overwrite)


class VersionedState:
    """State kept as write-once numbered files (<n>.json), the highest number being current.

    A file is never rewritten, so a crash leaves either the old or the new state, on any file system.
    """

    def __init__(self, storage: Storage, folder: str):
        self.storage, self.folder = storage, folder

    def _numbers(self) -> list[int]:
        names = self.storage.list_names(self.folder)
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def latest(self) -> tuple[int, Any]:
        numbers = self._numbers()
        if not numbers:
            return 0, None
        return numbers[-1], self.storage.read_json(f"{self.folder}/{numbers[-1]:012d}.json")

    def write(self, number: int, value: Any) -> None:
        self.storage.write_json(f"{self.folder}/{number:012d}.json", value, overwrite=True)

    def prune(self, keep: int) -> None:
        for number in self._numbers()[:-keep]:
            self.storage.delete(f"{self.folder}/{number:012d}.json")
