"""Named steps of the commit protocols where a test can kill the process (SIGKILL), as a crash would, or stop it
(SIGSTOP) to change the world around it (stop a service) before it goes on (SIGCONT).

`LAKECOMPACT_KILL_AT=<step>` kills the process right after that step; `<step>@<n>` at its n-th passage.
`LAKECOMPACT_STOP_AT=<step>` (also `@<n>`) stops it there instead.
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
SIGNALS = {"LAKECOMPACT_KILL_AT": signal.SIGKILL, "LAKECOMPACT_STOP_AT": signal.SIGSTOP}
_passed: dict[tuple[str, str], int] = {}


def reached(step: Step) -> None:
    """Mark a step as done; the process is killed (or stopped) here when LAKECOMPACT_KILL_AT (_STOP_AT) names it."""
    for variable, signal_number in SIGNALS.items():
        wanted = os.environ.get(variable)
        if not wanted:
            continue
        name, _, nth = wanted.partition("@")
        if name != step:
            continue
        _passed[variable, step] = _passed.get((variable, step), 0) + 1
        if _passed[variable, step] == int(nth or 1):
            os.kill(os.getpid(), signal_number)
