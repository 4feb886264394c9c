"""The tests' schema registry (tests/support/registry_server.py: Confluent's REST API) for one benchmark run.

    python benchmarks/engines/registry.py TOPIC

Registers the Avro schemas of benchmarks/generate.py's events as TOPIC-value and TOPIC-key (ids 1 and 2: a new
registry numbers them in that order, so a topic produced in an earlier run still names the right ones), prints
{"url": ..., "value": id, "key": id} as one line, and serves until its stdin closes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent.parent)]

from generate import avro_schema, key_schema, value_schema

from tests.support.registry_server import RegistryServer


def main() -> None:
    topic = sys.argv[1]
    with RegistryServer() as server:
        ids = {"value": server.register(f"{topic}-value", avro_schema(value_schema())),
               "key": server.register(f"{topic}-key", avro_schema(key_schema()))}
        print(json.dumps({"url": server.url, **ids}), flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
