"""lakecompact: Debezium change streams into compacted Hive tables on a data lake, on Spark."""

__version__ = "0.1.0"
