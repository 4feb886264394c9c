"""What every part of the e2e support uses: unique names, and progress lines in the test output."""

from __future__ import annotations

import uuid


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def say(message: str) -> None:
    print(f"[e2e] {message}", flush=True)
