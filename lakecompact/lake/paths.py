"""Where a lake's parts live: every folder and state file of a table (`TablePaths`) and of a database
(`DatabasePaths`), built here and nowhere else (docs/design.md "Storage layout")."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakecompact.spark import warehouse_uri


@dataclass(frozen=True)
class TablePaths:
    """Where one table's parts live (docs/design.md "Storage layout")."""

    root: str

    @property
    def base(self) -> str:
        return f"{self.root}/base"

    def base_version(self, version: int) -> str:
        return f"{self.base}/v={version}"

    def base_bucket(self, version: int, bucket: int) -> str:
        return f"{self.base_version(version)}/__bucket={bucket}"

    @property
    def increments(self) -> str:
        return f"{self.root}/increments"

    def increment(self, hour: str, batch: int) -> str:
        return f"{self.increments}/hour={hour}/batch={batch}"

    @staticmethod
    def batch_of_increment_file(file_path: Column) -> Column:
        """The batch of a file in `increment(hour, batch)`, read from its path (a path of another layout fails
        the cast rather than giving NULL: Spark's ANSI mode)."""
        return F.regexp_extract(file_path, r"/batch=([0-9]+)/[^/]*$", 1).cast("bigint")

    def archived(self, hour: str, batch: int) -> str:
        """A consumed increment stays where it was landed: it is archived by being out of `<t>_increments` and at
        or below the current manifest's last batch (docs/design.md "Compaction protocol"), so no store moves its objects."""
        return self.increment(hour, batch)

    @property
    def changes_root(self) -> str:
        return f"{self.root}/changes"

    def changes(self, version: int) -> str:
        return f"{self.changes_root}/v={version}"

    @property
    def changes_staging_root(self) -> str:
        return f"{self.changes_root}/_staging"

    def changes_staging(self, version: int) -> str:
        return f"{self.changes_staging_root}/v={version}"

    @property
    def events_root(self) -> str:
        """`row_history`: the events compactions folded in, one folder per version that wrote some."""
        return f"{self.root}/events"

    def events(self, version: int) -> str:
        return f"{self.events_root}/v={version}"

    @property
    def quarantine(self) -> str:
        return f"{self.root}/_quarantine"

    @property
    def state(self) -> str:
        return f"{self.root}/_state"

    @property
    def schema(self) -> str:
        """The folder of the table's schemas, one numbered file per version (the highest is current)."""
        return f"{self.state}/schema"

    @property
    def manifests(self) -> str:
        """The folder of the table's base version manifests, one numbered file per version."""
        return f"{self.state}/manifests"

    @property
    def lake_format(self) -> str:
        """The lake format the table is written in ({"format": n}; none: format 1)."""
        return f"{self.state}/format.json"

    @property
    def finished(self) -> str:
        """The last version whose compaction finished every step after its swap (publish, archive, collect)."""
        return f"{self.state}/finished.json"

    @property
    def delete_form(self) -> str:
        """How the table's topic carries deletes ("rows" or "tombstones"), as the lander last saw it."""
        return f"{self.state}/deletes.json"

    @property
    def held_truncates(self) -> str:
        """Truncates of a table not made yet because its key is not known (docs/design.md "Keys and keyless
        tables"), one folder per batch that held some, until the batch that makes the table lands them."""
        return f"{self.state}/held_truncates"

    def held_truncates_of(self, batch: int) -> str:
        return f"{self.held_truncates}/batch={batch}"

    @property
    def held_truncates_landed(self) -> str:
        """The batch whose increment took the held truncates ({"batch": n}); beside their folder, so that the
        folder goes before the record does."""
        return f"{self.state}/held_truncates_landed.json"

    @property
    def verified(self) -> str:
        """What the latest `verify` found: when, and how many keys differed from the source, by kind."""
        return f"{self.state}/verify.json"

    @property
    def verify_results(self) -> str:
        """The folder of `<t>_verify`: what every `verify` found different."""
        return f"{self.root}/verify"

    @property
    def compaction_lock(self) -> str:
        """Held while the table is compacted; still there after a compactor was killed."""
        return f"{self.state}/compact.lock"

    @property
    def view_record(self) -> str:
        """The hash of the SQL the table's view was created with ({"sha256": ...})."""
        return f"{self.state}/view.json"

    @property
    def schema_changes(self) -> str:
        """The folder of the table's schema changes, each kept until its hooks have fired."""
        return f"{self.state}/schema_changes"

    def schema_change(self, source_hash: str) -> str:
        """The schema change to the source schema of hash `source_hash`: the payload its hooks are sent."""
        return f"{self.schema_changes}/{source_hash}.json"

    @property
    def hooks_fired(self) -> str:
        """Which hook fired for which schema change of the table."""
        return f"{self.state}/hooks_fired.json"


@dataclass(frozen=True)
class DatabasePaths:
    """Where one database's own parts live, beside its tables' folders (docs/design.md "Storage layout")."""

    root: str

    @classmethod
    def of(cls, warehouse: str, database: str) -> DatabasePaths:
        """The database's folder in the warehouse; a plain path becomes a file: URI. Needs no Spark session."""
        return cls(f"{warehouse_uri(warehouse).rstrip('/')}/{database}")

    @property
    def quarantine(self) -> str:
        """Where events that belong to no table go (lines that are no event at all)."""
        return f"{self.root}/_quarantine"

    @property
    def state(self) -> str:
        return f"{self.root}/_state"

    @property
    def land_state(self) -> str:
        """The lander's state, one numbered file per committed batch (the highest is current)."""
        return f"{self.state}/land"

    @property
    def land_intent(self) -> str:
        """The input of the batch being landed, fixed before any of it is written; gone once it committed."""
        return f"{self.state}/land-intent.json"

    @property
    def land_lock(self) -> str:
        """Held while the database is landed into; still there after a lander was killed."""
        return f"{self.state}/land.lock"

    @property
    def run_status(self) -> str:
        """What `run` is doing, rewritten as it goes (the default `[run] status_file` of a local warehouse)."""
        return f"{self.state}/run-status.json"
