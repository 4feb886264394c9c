"""Local TCP ports for a test: one free to listen on, one nobody listens on."""

from __future__ import annotations

import socket


def _probed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def free_port() -> int:
    """A port free to listen on (as the probe that found it is closed)."""
    return _probed_port()


def closed_port() -> int:
    """A port nobody listens on once the probe is closed."""
    return _probed_port()
