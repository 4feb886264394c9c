"""Regenerate examples/events/*.jsonl: Debezium events of two tables in kcat -J form.

`customers` comes from PostgreSQL (LSN positions, REPLICA IDENTITY DEFAULT: a TOASTed `bio` that an
update leaves untouched arrives as the unavailable-value placeholder). `orders` comes from MySQL
(binlog file/pos/row positions, the file number rolling from 000009 to 000010). part-2 holds what a
connector restart delivers: late events and exact duplicates.

    python examples/make_events.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.debezium import (
    DATE,
    INT,
    MICRO_TS,
    PLACEHOLDER,
    TEXT,
    Topic,
    decimal,
    decimal_wire,
    write_kcat,
)

HERE = Path(__file__).resolve().parent / "events"

customers = Topic(
    "dbserver1.public.customers",
    [("id", INT), ("name", TEXT), ("email", TEXT), ("bio", TEXT), ("signed_up", DATE)],
    ["id"],
)
orders = Topic(
    "mysqlserver.shop.orders",
    [("order_id", INT), ("customer_id", INT), ("amount", decimal(10, 2)), ("status", TEXT), ("placed_at", MICRO_TS)],
    ["order_id"],
    connector="mysql",
)

BIO = "Grew up by the sea. " * 200  # large enough to be TOASTed by PostgreSQL


def customer(i, name, email, bio=BIO, day=19000):
    return {"id": i, "name": name, "email": email, "bio": bio, "signed_up": day}


def order(i, customer_id, amount, status, at=1_700_000_000_000_000):
    return {"order_id": i, "customer_id": customer_id, "amount": decimal_wire(amount, 2), "status": status,
            "placed_at": at}


def main() -> None:
    ts = 1_700_000_000_000
    part1 = [
        customers.event("r", customer(1, "Sally Thomas", "sally@example.com"), 1000, ts),
        customers.event("r", customer(2, "George Bailey", "gbailey@example.com"), 1000, ts),
        customers.event("r", customer(3, "Edward Walker", "ed@example.com"), 1000, ts),
        customers.event("c", customer(4, "Anne Kretchmar", "annek@example.com"), 1100, ts + 1000),
        # TOAST: the email changes, bio is untouched and arrives as the placeholder
        customers.event("u", {**customer(1, "Sally Thomas", "sally.t@example.com"), "bio": PLACEHOLDER}, 1200, ts + 2000),
        # REPLICA IDENTITY DEFAULT: a delete's before image is the key plus defaults
        customers.event("d", {"id": 3, "name": "", "email": "", "bio": None, "signed_up": 0}, 1300, ts + 3000),
        customers.tombstone({"id": 3}),
        orders.event("r", order(10, 1, "19.99", "placed"), ("mysql-bin.000009", 154, 0), ts),
        orders.event("r", order(11, 2, "5.00", "placed"), ("mysql-bin.000009", 154, 0), ts),
        orders.event("u", order(10, 1, "19.99", "shipped"), ("mysql-bin.000009", 880, 0), ts + 1000),
        orders.event("c", order(12, 4, "120.50", "placed"), ("mysql-bin.000010", 4, 0), ts + 2000),
        orders.event("c", order(13, 4, "7.25", "placed"), ("mysql-bin.000010", 4, 1), ts + 2000),
    ]
    part2 = [
        # a second placeholder update: bio must still resolve to the original text
        customers.event("u", {**customer(1, "Sally T.", "sally.t@example.com"), "bio": PLACEHOLDER}, 1400, ts + 4000),
        # late: an update of customer 3 from before its delete, redelivered after a restart
        customers.event("u", customer(3, "Edward W.", "ed@example.com"), 1250, ts + 2500),
        # duplicate of an event already landed in part 1
        customers.event("c", customer(4, "Anne Kretchmar", "annek@example.com"), 1100, ts + 1000),
        orders.event("u", order(11, 2, "5.00", "cancelled"), ("mysql-bin.000010", 900, 0), ts + 3000),
        orders.event("d", order(11, 2, "5.00", "cancelled"), ("mysql-bin.000010", 1200, 0), ts + 4000),
        # late: written before the binlog rolled to 000010, so it loses to the update above
        orders.event("u", order(12, 4, "99.00", "placed"), ("mysql-bin.000009", 990, 0), ts + 1500),
        # duplicate redelivery
        orders.event("u", order(10, 1, "19.99", "shipped"), ("mysql-bin.000009", 880, 0), ts + 1000),
        "{\"topic\": \"dbserver1.public.customers\", \"partition\": 0, \"offset\": 99, \"key\": nul",
    ]
    HERE.mkdir(exist_ok=True)
    write_kcat(HERE / "part-1.jsonl", part1)
    write_kcat(HERE / "part-2.jsonl", part2)


if __name__ == "__main__":
    main()
