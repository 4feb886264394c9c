"""The e2e stack's package (stack/): every component has the one shape, and S3 requests are signed as before
botocore signed them (no service started)."""

import datetime
import os

import botocore.auth

import stack
from stack.component import Component
from stack.s3 import _signed_headers


def test_every_component_is_one_module_with_the_one_shape():
    for name in stack.COMPONENTS + stack.OPTIONAL:
        component = stack.component(name)
        assert isinstance(component, Component)
        assert component.name == name
        assert type(component).__module__ == f"stack.{name}"
        assert component.logs().parent == stack.LOG_DIR
        for method in ("start", "ready", "stop", "logs"):
            assert callable(getattr(component, method))


def test_s3_requests_are_signed_with_aws_signature_v4(monkeypatch):
    # the signature the stack's own SigV4 code gave this request before botocore's signer replaced it
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: datetime.datetime(2026, 12, 3, 8, 0, 0))
    headers = _signed_headers("PUT", "http://127.0.0.1:19030/lake/a/b%20c?partNumber=1&uploadId=x",
                              {"If-None-Match": "*"}, b"xyz")
    assert headers == {
        "If-None-Match": "*",
        "X-Amz-Date": "20261203T080000Z",
        "X-Amz-Content-SHA256": "3608bca1e44ea6c4d268eb6db02260269892c0b42b86bbf1e77a6fa16c3c9282",
        "Authorization": "AWS4-HMAC-SHA256 Credential=lakecompact/20261203/us-east-1/s3/aws4_request, "
                         "SignedHeaders=host;if-none-match;x-amz-content-sha256;x-amz-date, "
                         "Signature=2b7bc5afbf8bdde151763d701e9734285d930da0e25da57bd1ef294c7750edd0",
    }


def test_trino_starts_past_a_pid_file_its_launcher_left(monkeypatch, tmp_path):
    """The launcher refuses to start while its pid file names a live process, which after a stop or a kill is
    whatever took that pid since (here this test's own)."""
    from stack import trino

    home, data = tmp_path / "home", tmp_path / "data"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "launcher").touch()
    (data / "var" / "run").mkdir(parents=True)
    (data / "var" / "run" / "launcher.pid").write_text(str(os.getpid()))
    spawned = []
    monkeypatch.setattr(trino, "TRINO_HOME", home)
    monkeypatch.setattr(trino, "DATA_DIR", data)
    monkeypatch.setattr(trino, "CONF_DIR", tmp_path / "conf")
    monkeypatch.setattr(trino, "java_home", lambda: tmp_path / "jdk")
    monkeypatch.setattr(trino, "spawn", lambda name, command, env: spawned.append(command))
    monkeypatch.setattr(trino.Trino, "pid", lambda self: None)
    assert trino.SERVICE.start()
    assert not (data / "var" / "run" / "launcher.pid").exists()
    assert spawned == [[str(home / "bin" / "launcher"), "run", f"--etc-dir={tmp_path / 'conf' / 'trino'}"]]
