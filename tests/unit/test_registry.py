"""The schema-registry client against a registry that speaks Confluent's REST API.

A real Confluent-compatible registry could not be started on this machine from the package registries
the project may use: Confluent Schema Registry is only in Confluent's own Maven repository; Apicurio
Registry's `io.apicurio:apicurio-registry-app` is on Maven Central only as a plain library jar (no
runnable Quarkus build; 3.x not at all) and cannot be rebuilt from Central because its dependency
`io.apicurio:apicurio-registry-utils-kafka` is missing there; Karapace is not on PyPI. So these tests
run against `tests/support/registry_server.py`, an in-process server that follows the Confluent API
(with its error bodies) and is loaded with the Avro schemas of real Debezium events
(tests/fixtures/debezium-events/*.avsc).
"""

from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

from lakecompact.errors import ConfigError
from lakecompact.lake.connect import row_fields
from lakecompact.schema.avro import envelope_row_schema, key_fields
from lakecompact.schema.registry import (
    RegisteredSchema,
    Registry,
    RegistryConfig,
    RegistryError,
    RegistryUnavailable,
    SchemaNotFound,
)
from tests.support.registry_server import PG_TOPIC, RegistryServer, read_avsc

VALUE = f"{PG_TOPIC}-value"
KEY = f"{PG_TOPIC}-key"


@pytest.fixture
def server():
    with RegistryServer() as running:
        running.load_debezium_schemas()
        yield running


class Sleeps(list):
    """Records the backoff delays instead of sleeping them."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client(url: str, sleeps: Sleeps | None = None, **settings) -> Registry:
    return Registry(RegistryConfig(url, **settings), sleep=sleeps if sleeps is not None else Sleeps())


def test_reads_subjects_versions_and_the_debezium_envelope(server):
    registry = client(server.url)
    assert registry.subjects() == [KEY, VALUE]
    assert registry.versions(VALUE) == [1]
    found = registry.schema(VALUE)
    assert isinstance(found, RegisteredSchema)
    assert (found.subject, found.version, found.schema_type) == (VALUE, 1, "AVRO")
    assert found.schema == read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")
    assert registry.schema(VALUE, 1) == found
    assert registry.schema_by_id(found.id) == found.schema

    columns = [(f.name, f.table_type) for f in row_fields(envelope_row_schema(found.schema))]
    assert columns == [("id", "INT"), ("first_name", "STRING"), ("last_name", "STRING"), ("email", "STRING")]
    assert key_fields(registry.schema(registry.subject(PG_TOPIC, "key")).schema) == ["id"]


def test_retries_5xx_with_exponential_backoff(server):
    sleeps = Sleeps()
    registry = client(server.url, sleeps, retries=5, backoff_seconds=0.2)
    server.fail_next(3, status=503)
    assert registry.versions(VALUE) == [1]
    assert sleeps == pytest.approx([0.2, 0.4, 0.8])
    assert server.count(f"/subjects/{VALUE}/versions") == 4


def test_gives_up_after_the_configured_retries_naming_url_and_status(server):
    sleeps = Sleeps()
    registry = client(server.url, sleeps, retries=2, backoff_seconds=0.1)
    server.fail_next(10, status=500)
    with pytest.raises(RegistryUnavailable) as caught:
        registry.subjects()
    assert caught.value.attempts == 3
    assert f"{server.url}/subjects" in str(caught.value)
    assert "HTTP 500" in str(caught.value) and "Injected failure" in str(caught.value)
    assert sleeps == pytest.approx([0.1, 0.2])
    assert server.count("/subjects") == 3


def test_backoff_is_capped(server):
    sleeps = Sleeps()
    registry = client(server.url, sleeps, retries=4, backoff_seconds=1.0, max_backoff_seconds=3.0)
    server.fail_next(4, status=502)
    registry.subjects()
    assert sleeps == pytest.approx([1.0, 2.0, 3.0, 3.0])


def test_retries_connection_errors_then_gives_up():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    registry = client(f"http://127.0.0.1:{port}", sleeps, retries=2, backoff_seconds=0.05)
    with pytest.raises(RegistryUnavailable) as caught:
        registry.schema_by_id(1)
    assert caught.value.attempts == 3 and "ConnectionError" in caught.value.last
    assert len(sleeps) == 2


def test_a_registry_that_does_not_answer_times_out():
    with socket.socket() as silent:  # accepts connections (backlog) but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        registry = client(f"http://127.0.0.1:{silent.getsockname()[1]}", retries=1, timeout_seconds=0.2)
        with pytest.raises(RegistryUnavailable) as caught:
            registry.subjects()
    assert caught.value.attempts == 2 and "Timeout" in caught.value.last


def test_404_is_a_clear_error_without_retries(server):
    registry = client(server.url, retries=5)
    with pytest.raises(SchemaNotFound) as caught:
        registry.schema("nope-value")
    error = caught.value
    assert (error.status, error.error_code) == (404, 40401)
    assert str(error) == (
        f"schema registry {server.url}/subjects/nope-value/versions/latest answered HTTP 404, "
        "error_code 40401: Subject 'nope-value' not found."
    )
    with pytest.raises(SchemaNotFound, match="error_code 40403: Schema 999 not found"):
        registry.schema_by_id(999)
    with pytest.raises(SchemaNotFound, match="40402: Version 7 not found"):
        registry.schema(VALUE, 7)
    assert len(server.requests) == 3


def test_invalid_version_is_rejected_before_any_request(server):
    registry = client(server.url)
    with pytest.raises(ConfigError, match="expected a version number >= 1 or \"latest\", got 'newest'"):
        registry.schema(VALUE, "newest")
    assert server.requests == []


def test_basic_auth():
    with RegistryServer(username="lake", password="s3cret") as server:
        server.load_debezium_schemas()
        assert client(server.url, username="lake", password="s3cret").subjects() == [KEY, VALUE]
        with pytest.raises(RegistryError) as caught:
            client(server.url, username="lake", password="wrong", retries=3).subjects()
        assert caught.value.status == 401
        assert f"{server.url}/subjects answered HTTP 401, error_code 401: Unauthorized" in str(caught.value)
        with pytest.raises(RegistryError, match="HTTP 401"):
            client(server.url).subjects()
        assert len(server.requests) == 3  # 401 is not retried


def test_schemas_are_cached_by_id_and_fixed_version(server):
    ids = server.load_debezium_schemas()
    registry = client(server.url)
    for _ in range(3):
        registry.schema_by_id(ids[VALUE])
    assert server.count("/schemas/ids/") == 1

    for _ in range(3):
        registry.schema(KEY, 1)
    assert server.count(f"/subjects/{KEY}/versions/1") == 1
    registry.schema_by_id(ids[KEY])  # known from the subject version: no request
    assert server.count("/schemas/ids/") == 1

    registry.schema(VALUE)
    registry.schema(VALUE)
    assert server.count(f"/subjects/{VALUE}/versions/latest") == 2  # latest can move: always asked
    registry.schema(VALUE, 1)
    assert server.count(f"/subjects/{VALUE}/versions/1") == 0  # learnt from latest


def test_register_a_new_version_and_read_it_back(server):
    registry = client(server.url)
    evolved = read_avsc("avro_pg_3x_RECONSTRUCTED_value_envelope.avsc")
    evolved["fields"][0]["type"][1]["fields"].append(
        {"name": "phone", "type": ["null", "string"], "default": None}
    )
    new_id = registry.register(VALUE, evolved)
    assert registry.register(VALUE, evolved) == new_id
    assert registry.versions(VALUE) == [1, 2]
    latest = registry.schema(VALUE)
    assert (latest.id, latest.version) == (new_id, 2)
    assert [f.name for f in row_fields(envelope_row_schema(latest.schema))][-1] == "phone"
    assert registry.schema(VALUE, 1).id != new_id
    with pytest.raises(RegistryError, match="HTTP 422, error_code 42201"):
        registry.register(VALUE, {"type": "record", "name": "Broken"})


def test_apicurio_style_base_url(server):
    with RegistryServer(prefix="/apis/ccompat/v7") as apicurio:
        apicurio.load_debezium_schemas()
        assert apicurio.url.endswith("/apis/ccompat/v7")
        registry = client(apicurio.url + "/")
        assert registry.schema(VALUE).schema["name"] == "Envelope"
        assert apicurio.requests == [("GET", f"/subjects/{VALUE}/versions/latest")]


def test_subject_naming_strategies():
    def subject(fmt: str, kind: str = "value", record: str | None = None) -> str:
        return Registry(RegistryConfig("http://r", subject_format=fmt)).subject(PG_TOPIC, kind, record)

    assert subject("{topic}-{kind}") == f"{PG_TOPIC}-value"
    assert subject("topic", "key") == f"{PG_TOPIC}-key"
    assert subject("record") == f"{PG_TOPIC}.Envelope"
    assert subject("record", "key") == f"{PG_TOPIC}.Key"
    assert subject("topic_record", record="x.Y") == f"{PG_TOPIC}-x.Y"
    assert subject("cdc.{topic}.{kind}") == f"cdc.{PG_TOPIC}.value"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"url": "registry:8081"}, "registry.url: expected an http:// or https:// URL, got 'registry:8081'"),
        ({"retries": -1}, "registry.retries: expected a whole number >= 0, got -1"),
        ({"timeout_seconds": 0}, "registry.timeout_seconds: expected a number of seconds > 0"),
        (
            {"subject_format": "{table}-value"},
            "registry.subject_format: expected topic, record, topic_record",
        ),
        ({"password": "x"}, "registry.username: expected a user name when registry.password is set"),
        ({"key": "k.pem"}, "registry.cert: expected a client certificate path when registry.key is set"),
    ],
)
def test_config_errors_name_what_was_expected(settings, message):
    with pytest.raises(ConfigError) as caught:
        RegistryConfig(**{"url": "http://r", **settings})
    assert str(caught.value).startswith(message)


def test_config_from_a_toml_table():
    config = RegistryConfig.from_dict(
        {"url": "https://r", "username": "u", "password": "p", "verify": "/ca.pem"}
    )
    assert (config.verify, config.retries) == ("/ca.pem", 5)
    with pytest.raises(ConfigError, match=r"registry\.retry: expected one of the keys url, username"):
        RegistryConfig.from_dict({"url": "https://r", "retry": 3})


def _certificate(folder, name: str) -> tuple[str, str]:
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", f"/CN={name}",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return str(cert), str(key)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make certificates")
def test_tls_with_a_ca_bundle_and_a_client_certificate(tmp_path):
    server_cert, server_key = _certificate(tmp_path, "registry")
    client_cert, client_key = _certificate(tmp_path, "lakecompact")
    with RegistryServer(certfile=server_cert, keyfile=server_key, client_ca=client_cert) as server:
        server.load_debezium_schemas()
        assert server.url.startswith("https://")
        trusted = client(server.url, verify=server_cert, cert=client_cert, key=client_key)
        assert trusted.versions(VALUE) == [1]

        sleeps = Sleeps()
        with pytest.raises(RegistryUnavailable, match="TLS error") as caught:
            client(server.url, sleeps, cert=client_cert, key=client_key).versions(VALUE)  # system CAs only
        assert caught.value.attempts == 1 and sleeps == []  # a certificate problem is not retried


def test_docstring_examples():
    import doctest

    import lakecompact.schema.registry

    assert doctest.testmod(lakecompact.schema.registry).failed == 0
