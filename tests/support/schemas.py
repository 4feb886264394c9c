"""Table schemas the SQL tests render templates and views of, without a lake: a keyed table of each kind of column
lakecompact treats apart (an array, a decimal), and a keyless one of the same fields."""

from __future__ import annotations

from lakecompact.lake.connect import Field
from lakecompact.lake.model import TableSchema

SCHEMA = TableSchema(
    "orders",
    "server.public.orders",
    (
        Field("id", {"type": "int32"}),
        Field("note", {"type": "string"}),
        Field("tags", {"type": "array", "items": {"type": "string"}}),
        Field("amount", {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}),
    ),
    ("id",),
)
KEYLESS = TableSchema("log", "server.public.log", SCHEMA.fields, ())
