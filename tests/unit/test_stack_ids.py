"""The e2e stack's generated identifiers (no service started)."""

import uuid

import stack.kafka


def test_a_kafka_cluster_id_never_starts_with_a_dash(monkeypatch):
    # 0xfb.. encodes to '-' first in URL-safe base64: the storage tool took such an id for an option
    dashed, plain = uuid.UUID(bytes=b"\xfb" + bytes(15)), uuid.UUID(bytes=b"\x00" * 16)
    drawn = iter([dashed, dashed, plain])
    monkeypatch.setattr(stack.kafka.uuid, "uuid4", lambda: next(drawn))
    assert stack.kafka.cluster_id() == "AAAAAAAAAAAAAAAAAAAAAA"
    assert next(drawn, None) is None  # both dashed ids were drawn and refused
