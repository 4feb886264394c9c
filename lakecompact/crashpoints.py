"""Named steps of the commit protocols where a test can kill the process (SIGKILL), as a crash would.

`LAKECOMPACT_KILL_AT=<step>` kills the process right after that step; `<step>@<n>` at its n-th passage.
Steps: land: intent, increments-written, partitions-added, offsets-recorded; compact: version-written,
manifest, swap, changes-published, archive, garbage-collected.
"""

from __future__ import annotations

import os
import signal
import typing
from typing import Literal

Step = Literal[
    "intent", "increments-written", "partitions-added", "offsets-recorded",
    "version-written", "manifest", "swap", "changes-published", "archive", "garbage-collected",
]
STEPS: tuple[str, ...] = typing.get_args(Step)
_passed: dict[str, int] = {}


def reached(step: Step) -> None:
    """Mark a step as done; the process dies here when LAKECOMPACT_KILL_AT names it."""
    wanted = os.environ.get("LAKECOMPACT_KILL_AT")
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != step:
        return
    _passed[step] = _passed.get(step, 0) + 1
    if _passed[step] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
