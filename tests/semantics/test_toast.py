"""TOAST: a column holding Debezium's unavailable-value placeholder keeps the key's previous value (docs/design.md "TOAST").

The placeholder's forms follow tests/fixtures/debezium-events/types_RECONSTRUCTED_encodings_from_debezium_tests.json:
text (and uuid) columns, bytea as the base64 of the placeholder's bytes, text[] as a one-element array,
int[] as the array of the placeholder's bytes. Checked within one batch, across batches, across a compaction
and through chains of placeholder updates; the placeholder never reaches a reader, and the raw increments
hold null plus the column's name in `__toast`.
"""

import base64
import dataclasses
import json

from tests.support.debezium import INT, PLACEHOLDER, TEXT, Topic

UUID = {"type": "string", "name": "io.debezium.data.Uuid", "version": 1}
T = Topic(
    "pg.public.docs",
    [
        ("id", INT),
        ("t", TEXT),
        ("b", {"type": "bytes"}),
        ("arr", {"type": "array", "items": {"type": "string", "optional": True}}),
        ("ints", {"type": "array", "items": {"type": "int32", "optional": True}}),
        ("u", UUID),
        ("n", INT),
    ],
    ["id"],
)
TABLE = "public_docs"

PH_FORMS = {
    "t": PLACEHOLDER,
    "b": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==",
    "arr": [PLACEHOLDER],
    "ints": [95, 95, 100, 101, 98, 101, 122, 105, 117, 109, 95, 117, 110, 97, 118, 97, 105, 108, 97, 98, 108, 101,
             95, 118, 97, 108, 117, 101],
    "u": "b68a35a7-17ad-35b3-af2a-ae46edb4545a",
}
TOASTABLE = ["t", "b", "arr", "ints", "u"]


def _b64(text):
    return base64.b64encode(text.encode()).decode()


def full(i, **changes):
    row = {"id": i, "t": f"t{i}", "b": _b64(f"b{i}"), "arr": [f"a{i}", "x"], "ints": [i, i * 10],
           "u": f"00000000-0000-0000-0000-{i:012d}", "n": i}
    return {**row, **changes}


def ph(i, n, **real):
    """An update under REPLICA IDENTITY DEFAULT: unchanged TOASTed columns are placeholders."""
    return {"id": i, **PH_FORMS, "n": n, **real}


def _partial(i):
    return {"id": i, "t": "", "b": "", "arr": [], "ints": [], "u": None, "n": 0}


def _nulls(i, n):
    """Every TOASTable column null: JSON rows leave null fields out."""
    return {"id": i, "n": n}


def _no_placeholder(rows):
    text = json.dumps(rows)
    for form in (PLACEHOLDER, PH_FORMS["b"], PH_FORMS["u"], json.dumps(PH_FORMS["ints"])[1:-1]):
        assert form not in text


def _view(lake):
    rows = lake.view(TABLE)
    _no_placeholder(rows)
    return rows


def _base(lake):
    rows = [{k: v for k, v in r.items() if k in full(0) or k in ("__op", "__deleted")} for r in lake.base(TABLE)]
    _no_placeholder(rows)
    return rows


def _increments(lake, where):
    return lake.rows(
        f"SELECT id, t, b, arr, ints, u, n, __toast FROM `{lake.database}`.`{TABLE}_increments` WHERE {where}"
    )


def test_placeholder_keeps_previous_value(lake):
    lake.write([
        # 1: within one batch (and again in batch 3, after a compaction)
        T.event("c", full(1), 100), T.event("u", ph(1, n=2), 200),
        # 2: previous value in batch 1, placeholder in batch 2 (no compaction between)
        T.event("c", full(2), 100),
        # 3: previous value in batch 1, placeholder in batch 3 (after a compaction)
        T.event("c", full(3), 100),
        # 4: a chain: only t stays TOASTed, then everything, then b changes, then everything again
        T.event("c", full(4), 100),
        T.event("u", ph(4, n=41, b=_b64("b42"), arr=["a42"], ints=[42], u="00000000-0000-0000-0000-000000000042"),
                200),
        # 5: the placeholder update arrives before the update it follows
        T.event("c", full(5), 100), T.event("u", ph(5, n=53), 300), T.event("u", full(5, t="t5 second", n=52), 200),
        # 6: no previous state at all: null, never the placeholder
        T.event("u", ph(6, n=6), 100),
        # 7: TOASTed, then deleted (partial before image): the soft-deleted row keeps the real values
        T.event("c", full(7), 100), T.event("u", ph(7, n=72), 200),
        # 8: the previous value was an explicit null: the placeholder keeps null
        T.event("c", full(8), 100),
        T.event("u", {"id": 8, "t": None, "b": None, "arr": None, "ints": None, "u": None, "n": 82}, 200),
        T.event("u", ph(8, n=83), 300),
    ])
    lake.land()
    batch1 = [
        full(1, n=2), full(2), full(3),
        full(4, n=41, b=_b64("b42"), arr=["a42"], ints=[42], u="00000000-0000-0000-0000-000000000042"),
        full(5, t="t5 second", n=53), _nulls(6, 6), full(7, n=72), _nulls(8, 83),
    ]
    assert _view(lake) == batch1
    # raw increments: null in place of the placeholder, and the column listed in __toast
    assert _increments(lake, "__op = 'u' AND id IN (1, 6)") == [
        {**_nulls(1, 2), "__toast": TOASTABLE}, {**_nulls(6, 6), "__toast": TOASTABLE},
    ]
    changed = full(4, n=41, b=_b64("b42"), arr=["a42"], ints=[42], u="00000000-0000-0000-0000-000000000042")
    del changed["t"]  # null: JSON rows leave it out
    assert _increments(lake, "id = 4 AND __op = 'u'") == [{**changed, "__toast": ["t"]}]
    assert _increments(lake, "id = 1 AND __op = 'c'") == [{**full(1), "__toast": []}]

    lake.write([
        T.event("u", ph(2, n=22), 200),
        T.event("u", ph(4, n=43), 300),
        T.event("d", _partial(7), 300), T.tombstone({"id": 7}),
    ])
    lake.land()
    batch2 = [row for row in batch1 if row["id"] != 7]
    batch2[1] = full(2, n=22)
    batch2[3] = {**batch2[3], "n": 43}
    assert _view(lake) == batch2
    lake.compact()
    assert _view(lake) == batch2
    assert _base(lake) == [
        {**row, "__op": "u", "__deleted": False} for row in batch2[:2]
    ] + [{**full(3), "__op": "c", "__deleted": False}] + [
        {**row, "__op": "u", "__deleted": False} for row in batch2[3:5]
    ] + [
        {**_nulls(6, 6), "__op": "u", "__deleted": False},
        {**full(7, n=72), "__op": "d", "__deleted": True},
        {**_nulls(8, 83), "__op": "u", "__deleted": False},
    ]

    lake.write([
        T.event("u", ph(3, n=32), 200),
        T.event("u", ph(4, n=44, b=_b64("b44")), 400), T.event("u", ph(4, n=45), 500),
        T.event("u", ph(1, n=3), 300),
        T.event("u", ph(8, n=84), 400),
    ])
    lake.land()
    final = [
        full(1, n=3), full(2, n=22), full(3, n=32),
        full(4, n=45, b=_b64("b44"), arr=["a42"], ints=[42], u="00000000-0000-0000-0000-000000000042"),
        full(5, t="t5 second", n=53), _nulls(6, 6), _nulls(8, 84),
    ]
    assert _view(lake) == final
    lake.compact()
    assert _view(lake) == final
    assert _base(lake) == [
        {**row, "__op": "u", "__deleted": False} for row in final[:6]
    ] + [
        {**full(7, n=72), "__op": "d", "__deleted": True},
        {**_nulls(8, 84), "__op": "u", "__deleted": False},
    ]


def test_late_update_before_a_compacted_placeholder_update(lake):
    """Source order of key 1: c@100 t1, u@200 'late' (delivered last), u@300 placeholder → t is 'late'.

    Table `early` is compacted between the two batches, table `once` is not: both must read the same.
    """
    early, once = (dataclasses.replace(T, name=f"pg.public.{name}", next_offset=0) for name in ("early", "once"))
    for topic in (early, once):
        lake.write([topic.event("c", full(1), 100), topic.event("u", ph(1, n=3), 300)])
    lake.land()
    lake.compact("public_early")
    for topic in (early, once):
        lake.write([topic.event("u", full(1, t="late", n=2), 200)])
    lake.land()
    expected = [full(1, t="late", n=3)]
    assert lake.view("public_once") == expected
    assert lake.view("public_early") == expected
    lake.compact()
    assert lake.view("public_once") == lake.view("public_early") == expected
