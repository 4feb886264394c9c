"""A client for Confluent-compatible schema registries (Confluent, Apicurio's `/apis/ccompat/v7`, Karapace).

Only the read side lakecompact needs (plus `register`, for tools and tests), over `requests`:
basic auth, TLS, timeouts, bounded retries with exponential backoff on 5xx / 429 / connection
errors, a clear error on any other 4xx, and an in-memory cache of schemas by id and of fixed
subject versions (`latest` is always asked, since it moves).

Subjects follow Confluent's naming strategies through one format string:

>>> config = RegistryConfig("http://registry:8081")
>>> Registry(config).subject("dbserver1.inventory.customers", "value")
'dbserver1.inventory.customers-value'
>>> Registry(RegistryConfig("http://registry:8081", subject_format="record")).subject("dbserver1.inventory.customers", "key")
'dbserver1.inventory.customers.Key'
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import requests

from lakecompact import retry
from lakecompact.config import RegistryConfig
from lakecompact.errors import ConfigError, LakecompactError, ServiceUnavailable

Kind = Literal["value", "key"]

_ACCEPT = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"


class RegistryError(LakecompactError):
    """The registry answered a request with an error (a 4xx other than 429)."""

    def __init__(self, url: str, status: int, message: str, error_code: int | None = None):
        self.url, self.status, self.message, self.error_code = url, status, message, error_code
        code = f", error_code {error_code}" if error_code is not None else ""
        super().__init__(f"schema registry {url} answered HTTP {status}{code}: {message}")


class SchemaNotFound(RegistryError):
    """HTTP 404: no such subject, version or schema id. Events that name it go to quarantine."""


class RegistryUnavailable(ServiceUnavailable):
    """The registry could not be reached, or kept failing, for every allowed attempt."""

    def __init__(self, url: str, attempts: int, last: str):
        self.url, self.attempts, self.last = url, attempts, last
        super().__init__(
            f"schema registry {url} did not answer successfully after {attempts} attempt(s); last: {last}"
        )


@dataclass(frozen=True)
class RegisteredSchema:
    """One version of a subject. `schema` is the parsed schema JSON (a dict for an Avro record)."""

    id: int
    version: int
    subject: str
    schema: Any
    schema_type: str = "AVRO"


class Registry:
    """A Confluent-compatible registry. Cheap to create; keep one per job to share its cache."""

    def __init__(
        self,
        config: RegistryConfig,
        *,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.config = config
        self.base = config.url.rstrip("/")
        self._sleep = sleep
        self._session = session or requests.Session()
        if config.username:
            self._session.auth = (config.username, config.password)
        # verify and cert go with each request: set on the session, REQUESTS_CA_BUNDLE would override them
        self._tls: dict[str, Any] = {"verify": config.verify}
        if config.cert:
            self._tls["cert"] = (config.cert, config.key) if config.key else config.cert
        self._session.headers["Accept"] = _ACCEPT
        self._by_id: dict[int, tuple[Any, str]] = {}
        self._by_version: dict[tuple[str, int], RegisteredSchema] = {}

    def subject(self, topic: str, kind: Kind = "value", record: str | None = None) -> str:
        """The subject of a topic's key or value schema under the configured naming strategy.

        For the record strategies `record` is the record's full name; without it Debezium's default is
        assumed (`<topic>.Envelope` for values, `<topic>.Key` for keys).
        """
        if kind not in ("value", "key"):
            raise ConfigError("subject kind", '"value" or "key"', kind)
        if record is None:
            record = f"{topic}.{'Envelope' if kind == 'value' else 'Key'}"
        return self.config.subject_pattern.format(topic=topic, kind=kind, record=record)

    def subjects(self) -> list[str]:
        return list(self._get("/subjects"))

    def versions(self, subject: str) -> list[int]:
        return [int(v) for v in self._get(f"/subjects/{_segment(subject)}/versions")]

    def schema(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        """A subject's schema at a version number or `latest` (fixed versions are cached)."""
        if version != "latest":
            if isinstance(version, bool) or not str(version).isdigit() or int(version) < 1:
                raise ConfigError(
                    f"version of subject {subject}", 'a version number >= 1 or "latest"', version
                )
            version = int(version)
            cached = self._by_version.get((subject, version))
            if cached is not None:
                return cached
        body = self._get(f"/subjects/{_segment(subject)}/versions/{version}")
        url = self._url(f"/subjects/{_segment(subject)}/versions/{version}")
        for name in ("id", "version", "schema"):
            if name not in body:
                raise RegistryError(url, 200, f"expected a response with {name!r}, got keys {sorted(body)}")
        schema_type = body.get("schemaType") or "AVRO"
        found = RegisteredSchema(
            int(body["id"]),
            int(body["version"]),
            body.get("subject", subject),
            _parse(body["schema"], url),
            schema_type,
        )
        self._by_version[(subject, found.version)] = found
        self._by_id.setdefault(found.id, (found.schema, schema_type))
        return found

    def schema_by_id(self, schema_id: int) -> Any:
        """The schema registered under a global id (what the 5-byte wire-format header names); cached."""
        schema_id = int(schema_id)
        cached = self._by_id.get(schema_id)
        if cached is not None:
            return cached[0]
        path = f"/schemas/ids/{schema_id}"
        body = self._get(path)
        if "schema" not in body:
            raise RegistryError(
                self._url(path), 200, f"expected a response with 'schema', got keys {sorted(body)}"
            )
        schema = _parse(body["schema"], self._url(path))
        self._by_id[schema_id] = (schema, body.get("schemaType") or "AVRO")
        return schema

    def schema_type(self, schema_id: int) -> str:
        """AVRO, JSON or PROTOBUF: the type of a schema id (fetched and cached like `schema_by_id`)."""
        self.schema_by_id(schema_id)
        return self._by_id[int(schema_id)][1]

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO") -> int:
        """Register a schema under a subject (idempotent on the registry side); returns its global id."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        body: dict[str, Any] = {"schema": text}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        answer = self._request("POST", f"/subjects/{_segment(subject)}/versions", body)
        return int(answer["id"])

    # -- HTTP -----------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return self.base + path

    def _get(self, path: str) -> Any:
        return self._request("GET", path)

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        url = self._url(path)
        attempts = self.config.retries + 1
        last = ""
        for attempt in retry.attempts(
            self.config.retries, self.config.backoff_seconds,
            sleep=self._sleep, max_backoff_seconds=self.config.max_backoff_seconds,
        ):
            try:
                response = self._session.request(
                    method,
                    url,
                    json=body,
                    timeout=self.config.timeout_seconds,
                    **self._tls,
                    headers={"Content-Type": "application/vnd.schemaregistry.v1+json"}
                    if body is not None
                    else None,
                )
            except requests.exceptions.SSLError as error:  # a certificate problem does not heal by retrying
                raise RegistryUnavailable(
                    url, attempt + 1, f"TLS error (check registry.verify / cert): {error}"
                ) from error
            except (requests.ConnectionError, requests.Timeout) as error:
                last = f"{type(error).__name__}: {error}"
                continue
            if response.status_code in retry.RETRY_STATUS:
                last = f"HTTP {response.status_code}: {_error_message(response)[0]}"
                continue
            if response.status_code >= 400:
                message, code = _error_message(response)
                error_class = SchemaNotFound if response.status_code == 404 else RegistryError
                raise error_class(url, response.status_code, message, code)
            try:
                return response.json()
            except ValueError as error:
                raise RegistryError(
                    url, response.status_code, f"expected a JSON response, got {response.text[:200]!r}"
                ) from error
        raise RegistryUnavailable(url, attempts, last)


def _segment(value: str) -> str:
    return quote(value, safe="")


def _parse(schema: Any, url: str) -> Any:
    """The registry sends the schema as a JSON string; a JSON value already parsed is accepted too."""
    if not isinstance(schema, str):
        return schema
    try:
        return json.loads(schema)
    except ValueError as error:
        raise RegistryError(url, 200, f"expected the schema as JSON text, got {schema[:200]!r}") from error


def _error_message(response: requests.Response) -> tuple[str, int | None]:
    """The registry's own message and error_code ({"error_code": 40401, "message": ...}), or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return (response.text.strip()[:300] or response.reason or "no message"), None
    if isinstance(body, dict):
        message = body.get("message") or body.get("detail") or body.get("title") or json.dumps(body)[:300]
        code = body.get("error_code")
        return str(message), int(code) if isinstance(code, int) else None
    return json.dumps(body)[:300], None
