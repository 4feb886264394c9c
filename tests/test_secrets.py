"""Secrets never show: with a distinctive registry password, JDBC metastore password, SASL JAAS config, HTTP
hook header and S3 access key, secret key and session token in the config, real `lakecompact` processes land
(twice: a column is added, a hook fires and fails), fail on purpose (with `--debug`'s traceback), show status and
history, and report; then every line they printed and every byte of every file they wrote is searched for each
secret. The JDBC password is really used: the metastore is Derby reached through `[metastore] jdbc_url`, so the
session connects with it; the S3 keys go to Spark as the s3a client's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakecompact import config as config_module
from lakecompact.errors import ConfigError
from tests.support.cli import lakecompact
from tests.support.debezium import INT, TEXT, Topic, write_kcat
from tests.support.http import HookReceiver

pytestmark = pytest.mark.spark

SECRETS = {
    "registry password": "Reg1stry-S3cret-9043",
    "JDBC password": "Jdbc-S3cret-5512",
    "SASL JAAS config": "Jaas-S3cret-7731",
    "hook header": "Hook-S3cret-2208",
    "S3 access key": "S3-Access-3806",  # given to Spark as the s3a client's settings
    "S3 secret key": "S3-S3cret-3806",
    "S3 session token": "S3-Token-S3cret-3806",
}


def secret_config(tmp_path: Path, hook_port: int) -> Path:
    config = tmp_path / "lake.toml"
    config.write_text(
        f'warehouse = "{tmp_path / "warehouse"}"\n'
        'database = "lake"\n'
        "[source]\n"
        'kind = "files"\n'
        f'paths = ["{tmp_path / "events"}/*.jsonl"]\n'
        "[source.kafka_options]\n"
        '"kafka.sasl.jaas.config" = "org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'username=\\"lake\\" password=\\"{SECRETS["SASL JAAS config"]}\\";"\n'
        "[metastore]\n"
        f'jdbc_url = "jdbc:derby:;databaseName={tmp_path / "metastore_db"};create=true"\n'
        'jdbc_driver = "org.apache.derby.jdbc.EmbeddedDriver"\n'
        'jdbc_user = "lake"\n'
        f'jdbc_password = "{SECRETS["JDBC password"]}"\n'
        "[registry]\n"
        'url = "http://127.0.0.1:9/registry"\n'
        'username = "lake"\n'
        f'password = "{SECRETS["registry password"]}"\n'
        "[[hooks]]\n"
        'kind = "http"\n'
        f'target = "http://127.0.0.1:{hook_port}/schema-changed"\n'
        "retries = 0\n"
        f'headers = {{ Authorization = "Bearer {SECRETS["hook header"]}" }}\n'
        "[s3]\n"
        'endpoint = "http://127.0.0.1:9"\n'
        f'access_key = "{SECRETS["S3 access key"]}"\n'
        f'secret_key = "{SECRETS["S3 secret key"]}"\n'
        f'session_token = "{SECRETS["S3 session token"]}"\n'
    )
    return config


def test_no_secret_is_printed_or_written(tmp_path):
    hook = HookReceiver(500, b"hook endpoint down")  # an endpoint that is down: every call gets a 500
    config = secret_config(tmp_path, hook.port)
    (tmp_path / "events").mkdir()
    pg = Topic("pg.public.items", [("id", INT), ("name", TEXT)], ["id"])
    write_kcat(tmp_path / "events" / "part-1.jsonl", [
        pg.event("c", {"id": 1, "name": "a"}, 100), pg.event("c", {"id": 2, "name": "b"}, 110),
        pg.event("x", {"id": 3, "name": "c"}, 120),  # an unknown op: quarantined with its reason
    ])
    evolved = Topic("pg.public.items", [("id", INT), ("name", TEXT), ("note", TEXT)], ["id"])
    try:
        runs = [lakecompact(config, "land")]  # creates the table in the JDBC metastore
        write_kcat(tmp_path / "events" / "part-2.jsonl", [evolved.event("c", {"id": 4, "name": "d", "note": "n"}, 130)])
        runs += [  # few JVMs (status, history and the refused land start none), but every kind of output
            lakecompact(config, "land"),  # a column added: the hook fires, and fails
            lakecompact(config, "--debug", "land", "--table", "public_items"),  # refused, with the traceback
            lakecompact(config, "status", "--json"),
            lakecompact(config, "history", "--table", "public_items"),
            lakecompact(config, "report", "--out", str(tmp_path / "report.html")),  # Spark reads the quarantine
        ]
    finally:
        hook.close()
    # the runs did what they should, so that the search below covers real work
    assert [r.returncode for r in runs] == [0, 0, 1, 0, 0, 0], [r.stderr[-500:] for r in runs]
    assert "lake.public_items: 2 rows landed in batch 1" in runs[0].stdout
    assert "hook http:" in runs[1].stderr  # the failure was reported...
    sent = [headers.get("Authorization", "") for _, headers in hook.received]
    assert sent == [f"Bearer {SECRETS['hook header']}"]  # ...after the header was sent
    assert "Traceback" in runs[2].stderr
    assert "unknown op" in (tmp_path / "report.html").read_text()

    printed = "\n".join(r.stdout + r.stderr for r in runs)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "lake.toml"]
    assert any(p.suffix == ".parquet" for p in files) and (tmp_path / "report.html") in files
    for what, secret in SECRETS.items():
        assert secret not in printed, f"the {what} was printed"
        leaked = [str(p) for p in files if secret.encode() in p.read_bytes()]
        assert not leaked, f"the {what} was written to {leaked}"


@pytest.mark.parametrize("section, key", [("registry", "password"), ("metastore", "jdbc_password"),
                                          ("s3", "access_key"), ("s3", "secret_key"), ("s3", "session_token")])
def test_a_secret_of_the_wrong_type_is_not_echoed(section, key):
    raw = {"warehouse": "/w", "source": {"paths": ["x"]}, "registry": {"url": "http://r", "username": "u"},
           section: {**({"url": "http://r", "username": "u"} if section == "registry" else {}), key: 90439043}}
    with pytest.raises(ConfigError) as error:
        config_module.from_dict(raw)
    assert str(error.value).startswith(f"{section}.{key}: expected a string")
    assert "90439043" not in str(error.value)


@pytest.mark.parametrize("s3", [
    {"secret_key": "S3-S3cret-3806"},  # without its access key
    {"session_token": "S3-S3cret-3806"},  # without the keys
    {"secret_kye": "S3-S3cret-3806"},  # an unknown key
    {"endpoint": "http://lake:S3-S3cret-3806@127.0.0.1:19030"},  # a password in the URL
], ids=["secret-alone", "token-alone", "misspelt", "in-endpoint"])
def test_an_s3_section_refused_does_not_echo_its_secrets(s3):
    with pytest.raises(ConfigError) as error:
        config_module.from_dict({"warehouse": "/w", "source": {"paths": ["x"]}, "s3": s3})
    assert str(error.value).startswith("s3.") and "S3cret" not in str(error.value)


def test_the_config_repr_hides_every_secret(tmp_path):
    config = config_module.load(secret_config(tmp_path, 9))
    shown = repr(config) + str(config)
    assert "lake.toml" not in shown and config.metastore.jdbc_user == "lake"  # it was loaded
    for what, secret in SECRETS.items():
        assert secret not in shown, what
