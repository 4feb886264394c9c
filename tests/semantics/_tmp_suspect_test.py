from tests.semantics.test_property import *

def test_toast_late_older_update_after_compaction(lake):
    t = topic()
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, offset=0),
                t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300, offset=1)], name="a.jsonl")
    lake.land()
    lake.compact()
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, offset=2)], name="a.jsonl")
    lake.land()
    print("VIEW1", actual_view(lake))
    lake.compact()
    print("VIEW2", actual_view(lake), actual_base(lake))

def test_toast_unresolved_then_insert_arrives(lake):
    t = topic()
    lake.write([t.event("u", {"id": 1, "note": PLACEHOLDER, "qty": 3}, 300, offset=1)], name="a.jsonl")
    lake.land()
    print("VIEW0", actual_view(lake))
    lake.compact()
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, offset=0)], name="a.jsonl")
    lake.land()
    print("VIEW1", actual_view(lake))

def test_deleted_values_late_update(lake):
    t = topic()
    lake.write([t.event("c", {"id": 1, "note": "a", "qty": 1}, 100, offset=0),
                t.event("d", {"id": 1, "note": "", "qty": 0}, 300, offset=1)], name="a.jsonl")
    lake.land()
    lake.compact()
    lake.write([t.event("u", {"id": 1, "note": "b", "qty": 2}, 200, offset=2)], name="a.jsonl")
    lake.land()
    lake.compact()
    print("BASE", actual_base(lake))
