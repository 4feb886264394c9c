"""An in-process schema registry speaking Confluent's REST API, for tests.

A real Confluent-compatible registry cannot be started from the package registries this project may use:
Confluent Schema Registry is published only to Confluent's own Maven repository; Apicurio Registry's
`io.apicurio:apicurio-registry-app` is on Maven Central only as a plain library jar (no runnable
Quarkus build, and the 3.x app not at all), and rebuilding it fails because its dependency
`io.apicurio:apicurio-registry-utils-kafka` is not on Maven Central; Karapace is not on PyPI.
So this server follows the API instead (the parts lakecompact uses, with Confluent's error bodies):

    GET  /subjects                                  ["a-value", ...]
    GET  /subjects/{subject}/versions               [1, 2]                       40401 subject not found
    GET  /subjects/{subject}/versions/{n|latest}    {subject, version, id, schema}  40402 version not found
    GET  /schemas/ids/{id}                          {schema}                     40403 schema not found
    POST /subjects/{subject}/versions  {schema}     {id}   (same schema: same id; invalid Avro: 42201)

with optional HTTP basic auth (401), optional TLS (and client certificates), an optional path prefix (Apicurio serves the same API under
`/apis/ccompat/v7`), a log of every request, and `fail_next(n, status)` to answer the next n requests
with a 5xx. `load_debezium_schemas()` registers the Avro schemas of the real Debezium events in
tests/fixtures/debezium-events.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import unquote

import avro.errors
import avro.schema

from tests.support.paths import DEBEZIUM_EVENTS

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
PG_TOPIC = "dbserver1.inventory.customers"


class RegistryServer:
    """Start with `with RegistryServer() as server:`; `server.url` is the API root."""

    def __init__(
        self,
        *,
        username: str = "",
        password: str = "",
        prefix: str = "",
        certfile: str = "",
        keyfile: str = "",
        client_ca: str = "",
    ):
        self.username, self.password = username, password
        self.certfile, self.keyfile, self.client_ca = certfile, keyfile, client_ca
        self.prefix = prefix.rstrip("/")
        self.requests: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}  # canonical schema text → global id
        self._schemas: dict[int, str] = {}
        self._subjects: dict[str, list[int]] = {}  # subject → ids, version n at index n-1
        self._failures: list[int] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self, port: int = 0) -> Self:
        """Serve on `port` (0: any free one; the port it had, to come back after `stop`)."""
        handler = type("Handler", (_Handler,), {"registry": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        if self.certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.certfile, self.keyfile or None)
            if self.client_ca:  # mutual TLS: a client certificate signed by (or equal to) client_ca
                context.verify_mode = ssl.CERT_REQUIRED
                context.load_verify_locations(self.client_ca)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="registry-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(5)
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        scheme = "https" if self.certfile else "http"
        return f"{scheme}://{host}:{port}{self.prefix}"

    # -- state ----------------------------------------------------------------------------------

    def register(self, subject: str, schema: Any) -> int:
        """Register directly (no HTTP); returns the global id, the same one for the same schema."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        parsed = avro.schema.parse(text)  # invalid Avro raises, as the real registry answers 42201
        canonical = json.dumps(parsed.to_json(), sort_keys=True)
        with self._lock:
            schema_id = self._ids.get(canonical)
            if schema_id is None:
                schema_id = self._ids[canonical] = len(self._ids) + 1
                self._schemas[schema_id] = text
            versions = self._subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def fail_next(self, count: int, status: int = 503) -> None:
        """Answer the next `count` requests with `status` (and Confluent's error body)."""
        with self._lock:
            self._failures.extend([status] * count)

    def count(self, path_start: str) -> int:
        """How many requests had a path (without the prefix) starting with `path_start`."""
        return sum(1 for _, path in self.requests if path.startswith(path_start))

    def load_debezium_schemas(self) -> dict[str, int]:
        """Register the PostgreSQL envelope and key .avsc of tests/fixtures/debezium-events; subject → id."""
        return {
            f"{PG_TOPIC}-value": self.register(
                f"{PG_TOPIC}-value", read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")
            ),
            f"{PG_TOPIC}-key": self.register(
                f"{PG_TOPIC}-key", read_avsc("avro_pg_3x_RECONSTRUCTED_key.avsc")
            ),
        }

    # -- the API --------------------------------------------------------------------------------

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, Any]:
        if self.prefix:
            if not path.startswith(self.prefix + "/") and path != self.prefix:
                return 404, {"error_code": 404, "message": f"HTTP 404 Not Found: {path}"}
            path = path[len(self.prefix) :] or "/"
        with self._lock:
            self.requests.append((method, path))
            failure = self._failures.pop(0) if self._failures else None
        if failure is not None:
            return failure, {
                "error_code": failure * 100 + 3,
                "message": "Injected failure: store unavailable",
            }
        if self.username and not self._authorized(headers.get("Authorization", "")):
            return 401, {"error_code": 401, "message": "Unauthorized"}
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        if method == "GET":
            return self._get(parts)
        if method == "POST" and len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            return self._post_version(parts[1], body)
        return 405 if parts else 404, {
            "error_code": 405,
            "message": f"HTTP 405 Method Not Allowed: {method} {path}",
        }

    def _authorized(self, header: str) -> bool:
        expected = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return header == f"Basic {expected}"

    def _get(self, parts: list[str]) -> tuple[int, Any]:
        with self._lock:
            if not parts:
                return 200, {}
            if parts == ["subjects"]:
                return 200, sorted(self._subjects)
            if parts[0] == "schemas" and len(parts) == 3 and parts[1] == "ids":
                schema_id = int(parts[2]) if parts[2].isdigit() else -1
                if schema_id not in self._schemas:
                    return 404, {"error_code": 40403, "message": f"Schema {parts[2]} not found"}
                return 200, {"schema": self._schemas[schema_id]}
            if parts[0] == "subjects" and len(parts) in (3, 4) and parts[2] == "versions":
                subject = parts[1]
                if subject not in self._subjects:
                    return 404, {"error_code": 40401, "message": f"Subject '{subject}' not found."}
                versions = self._subjects[subject]
                if len(parts) == 3:
                    return 200, list(range(1, len(versions) + 1))
                return self._version(subject, versions, parts[3])
        return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}

    def _version(self, subject: str, versions: list[int], wanted: str) -> tuple[int, Any]:
        if wanted in ("latest", "-1"):
            number = len(versions)
        elif wanted.isdigit() and int(wanted) > 0:
            number = int(wanted)
        else:
            return 422, {
                "error_code": 42202,
                "message": f"The specified version '{wanted}' is not a valid version id. Allowed values are "
                'between [1, 2^31-1] and the string "latest"',
            }
        if number > len(versions):
            return 404, {"error_code": 40402, "message": f"Version {wanted} not found."}
        schema_id = versions[number - 1]
        return 200, {
            "subject": subject,
            "version": number,
            "id": schema_id,
            "schema": self._schemas[schema_id],
        }

    def _post_version(self, subject: str, body: bytes) -> tuple[int, Any]:
        try:
            request = json.loads(body or b"{}")
            schema_id = self.register(subject, request["schema"])
        except (ValueError, KeyError, TypeError, avro.errors.AvroException) as error:
            return 422, {
                "error_code": 42201,
                "message": f"Either the input schema or one of its references is invalid: {error}",
            }
        return 200, {"id": schema_id}


class _Handler(BaseHTTPRequestHandler):
    registry: RegistryServer

    def do_GET(self) -> None:
        self._respond("GET")

    def do_POST(self) -> None:
        self._respond("POST")

    def do_DELETE(self) -> None:
        self._respond("DELETE")

    def _respond(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        status, answer = self.registry.answer(method, self.path.split("?", 1)[0], self.headers, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="schema-registry"')
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def read_avsc(name: str) -> dict[str, Any]:
    """One of the Avro schemas in tests/fixtures/debezium-events."""
    return json.loads((DEBEZIUM_EVENTS / name).read_text())
