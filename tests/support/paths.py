"""Where the suite's data lives: every file a test reads is under tests/fixtures/, found from this file."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Debezium's own examples of its events (verbatim or reconstructed; where each came from: PROVENANCE.md there)
DEBEZIUM_EVENTS = FIXTURES / "debezium-events"
