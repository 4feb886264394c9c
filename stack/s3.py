"""The stack's S3: S3Proxy 4.0.0 on a filesystem store (.stack/s3/data), bucket ``lake``, conditional PUTs honoured;
the Spark settings for s3a:// on it, a signed request to it (AWS Signature V4, by botocore), and the requests it
served, parsed from its request log."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import requests

from .component import Component
from .processes import java, log, poll, service_marker, spawn
from .settings import (
    CONF_DIR,
    LOG_DIR,
    S3_ACCESS_KEY,
    S3_BUCKET,
    S3_DIR,
    S3_ENDPOINT,
    S3_HEAP,
    S3_REGION,
    S3_REQUEST_LOG,
    S3_SECRET_KEY,
    S3PROXY_JARS,
    StackError,
)

# S3Proxy 4.0.0 (scripts/stack/pom.xml says how it was chosen): the only release whose If-None-Match: * PUT is
# atomic (its filesystem store publishes such a PUT with link(2)); If-Match is honoured, as a HEAD then a write.
_S3_LOGBACK = """\
<configuration>
  <!-- written by the stack package (rewritten on every up) -->
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>[s3proxy] %.-1p %d{{MM-dd HH:mm:ss.SSS}} %t %c{{30}} %m%n</pattern></encoder>
  </appender>
  <!-- each request's line and its headers, for s3_request_log(); emptied at every start -->
  <appender name="REQUESTS" class="ch.qos.logback.core.FileAppender">
    <file>{requests}</file>
    <append>false</append>
    <encoder><pattern>%d{{HH:mm:ss.SSS}}|%t|%m%n</pattern></encoder>
  </appender>
  <logger name="org.gaul.s3proxy.S3ProxyHandler" level="{level}" additivity="false">
    <appender-ref ref="REQUESTS" />
  </logger>
  <root level="INFO"><appender-ref ref="STDOUT" /></root>
</configuration>
"""
S3_REQUESTS_LOG = LOG_DIR / "s3-requests.log"


def s3_spark_conf() -> dict[str, str]:
    """The ``spark.hadoop.fs.s3a.*`` settings for ``s3a://<S3_BUCKET>/...`` on the stack's S3 (jars:
    s3a_jars()). The checksum settings are Hadoop 3.5's defaults, spelled out: the AWS SDK (>= 2.30) would
    otherwise add CRC32 checksums to every upload (aws-chunked bodies with trailers) and validate the ones in
    responses."""
    s3a = {
        "endpoint": S3_ENDPOINT,
        "endpoint.region": S3_REGION,
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        "access.key": S3_ACCESS_KEY,
        "secret.key": S3_SECRET_KEY,
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "checksum.generation": "false",
        "checksum.validation": "false",
        "create.conditional.enabled": "true",  # createFile(...).opt("fs.option.create.conditional.overwrite")
    }
    return {f"spark.hadoop.fs.s3a.{k}": v for k, v in s3a.items()}


def s3a_committer_conf(committer: str = "magic") -> dict[str, str]:
    """Spark settings that write files on s3a:// through the S3A committer ``committer`` (``magic``, or the
    staging ones ``directory``/``partitioned``) bound by spark-hadoop-cloud (PathOutputCommitProtocol,
    BindingParquetOutputCommitter). (Without these, pyspark 4.3 already writes s3a:// through the magic
    committer: its SparkContext sets fs.s3a.committer.name=magic; no renames either way.) The staging committers keep their task lists in a directory that driver and
    executors must share: .stack/s3/staging, on this machine."""
    conf = {
        "spark.hadoop.fs.s3a.committer.name": committer,
        "spark.hadoop.fs.s3a.committer.magic.enabled": "true",
        "spark.sql.sources.commitProtocolClass": "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
        "spark.sql.parquet.output.committer.class":
            "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
    }
    if committer != "magic":
        conf["spark.hadoop.fs.s3a.committer.staging.tmp.path"] = (S3_DIR / "staging").as_uri()
    return conf


def _signed_headers(method: str, url: str, headers: dict, payload: bytes) -> dict:
    """``headers`` plus AWS Signature V4 (service s3) headers for a request to ``url`` (its path and query already
    in canonical, percent-encoded form) with the stack's credentials: botocore's signer for S3, which signs the
    payload's SHA-256 on plain HTTP and takes the path as it is. (botocore is imported here, not with the package:
    a test or benchmark that never talks to S3 needs only the standard library and requests.)"""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, data=payload, headers=headers)
    S3SigV4Auth(Credentials(S3_ACCESS_KEY, S3_SECRET_KEY), "s3", S3_REGION).add_auth(request)
    return dict(request.headers.items())


def s3_request(method: str, key: str = "", *, bucket: str | None = None, data: bytes = b"",
               headers: dict | None = None, params: dict | None = None, timeout: float = 30) -> requests.Response:
    """One signed (SigV4) request to the stack's S3: ``method`` on ``/<bucket>/<key>`` (path style; bucket
    S3_BUCKET, or "" for the service itself), e.g. ``s3_request("PUT", "a/b", data=b"x",
    headers={"If-None-Match": "*"})``. Returns the response, whatever its status."""
    bucket = S3_BUCKET if bucket is None else bucket
    path = "/" + "/".join(x for x in (quote(bucket, safe=""), quote(key, safe="/~")) if x)
    query = "&".join(f"{quote(str(k), safe='~')}={quote(str(v), safe='~')}" for k, v in (params or {}).items())
    url = S3_ENDPOINT + path + (f"?{query}" if query else "")
    return requests.request(method, url, data=data, headers=_signed_headers(method, url, dict(headers or {}), data),
                            timeout=timeout)


@dataclasses.dataclass(frozen=True)
class S3Request:
    """One request S3Proxy served, as its request log shows it."""
    time: str  # HH:MM:SS.mmm
    method: str
    bucket: str
    key: str  # "" for a bucket or the service
    query: dict[str, str]
    copy_source: str | None  # x-amz-copy-source: a copy (CopyObject, UploadPartCopy)
    headers: dict[str, str]  # lower-case names

    @property
    def op(self) -> str:
        """The S3 operation: CopyObject, UploadPartCopy, PutObject, UploadPart, CreateMultipartUpload,
        CompleteMultipartUpload, AbortMultipartUpload, GetObject, HeadObject, DeleteObject, DeleteObjects,
        ListObjects, ListMultipartUploads, HeadBucket, CreateBucket, DeleteBucket, ListBuckets, or Other."""
        m, q, obj = self.method, self.query, bool(self.key)
        if not self.bucket:
            return "ListBuckets" if m == "GET" else "Other"
        if not obj:
            if m == "GET":
                return "ListMultipartUploads" if "uploads" in q else "ListObjects"
            if m == "POST" and "delete" in q:
                return "DeleteObjects"
            return {"HEAD": "HeadBucket", "PUT": "CreateBucket", "DELETE": "DeleteBucket"}.get(m, "Other")
        if m == "PUT":
            if self.copy_source:
                return "UploadPartCopy" if "partNumber" in q else "CopyObject"
            return "UploadPart" if "partNumber" in q else "PutObject"
        if m == "POST":
            return "CreateMultipartUpload" if "uploads" in q else "CompleteMultipartUpload" if "uploadId" in q else "Other"
        if m == "DELETE":
            return "AbortMultipartUpload" if "uploadId" in q else "DeleteObject"
        return {"GET": "GetObject", "HEAD": "HeadObject"}.get(m, "Other")


_S3_REQUEST_LINE = re.compile(r"^([^|]*)\|([^|]*)\|request: .*\{([A-Z]+)@\w+ (\S+) HTTP/[\d.]+\}")
_S3_HEADER_LINE = re.compile(r"^([^|]*)\|([^|]*)\|header: ([^:]+): ?(.*)$")


def s3_request_log_mark() -> int:
    """Where the request log ends now: ``s3_request_log(since=mark)`` gives the requests served after it."""
    try:
        return S3_REQUESTS_LOG.stat().st_size
    except OSError:
        return 0


def s3_request_log(since: int = 0) -> list[S3Request]:
    """The requests the stack's S3 has served since it started (or since the byte offset ``since`` of
    s3_request_log_mark()), in the order they arrived, parsed from S3Proxy's log of each request's line and
    headers (S3ProxyHandler at TRACE; off with LAKECOMPACT_S3_REQUEST_LOG=0). Copies are the requests with
    a ``copy_source`` (``op`` CopyObject or UploadPartCopy). A request is logged as it arrives, so all those of
    a finished job are there; a request S3Proxy refused (e.g. 412) is counted too."""
    try:
        with open(S3_REQUESTS_LOG, "rb") as f:
            f.seek(since)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    pending: dict[str, dict] = {}  # thread -> the request it is handling (a Jetty thread serves one at a time)
    done: list[dict] = []
    for line in text.splitlines():
        m = _S3_REQUEST_LINE.match(line)
        if m:
            time_, thread, method, url = m.groups()
            parts = urlsplit(url)
            bucket, _, key = parts.path.lstrip("/").partition("/")
            entry = {"time": time_, "method": method, "bucket": unquote(bucket), "key": unquote(key),
                     "query": dict(parse_qsl(parts.query, keep_blank_values=True)), "headers": {}}
            pending[thread] = entry
            done.append(entry)
            continue
        m = _S3_HEADER_LINE.match(line)
        if m and m.group(2) in pending:
            pending[m.group(2)]["headers"][m.group(3).lower()] = m.group(4)
    out = []
    for e in done:
        source = e["headers"].get("x-amz-copy-source")
        out.append(S3Request(e["time"], e["method"], e["bucket"], e["key"], e["query"],
                             unquote(source) if source else None, e["headers"]))
    return out


def _s3proxy_jar() -> Path:
    jars = sorted(S3PROXY_JARS.glob("s3proxy-*-jar-with-dependencies.jar"))
    if not jars:
        raise StackError(f"S3Proxy is not installed under {S3PROXY_JARS}: run scripts/stack/install.sh")
    return jars[-1]


def _write_conf() -> Path:
    (S3_DIR / "data").mkdir(parents=True, exist_ok=True)
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    (CONF_DIR / "s3proxy-logback.xml").write_text(
        _S3_LOGBACK.format(requests=S3_REQUESTS_LOG, level="TRACE" if S3_REQUEST_LOG else "INFO"))
    conf = CONF_DIR / "s3proxy.conf"
    conf.write_text(
        "# written by the stack package (rewritten on every up)\n"
        f"s3proxy.endpoint={S3_ENDPOINT}\n"
        "s3proxy.authorization=aws-v2-or-v4\n"
        f"s3proxy.identity={S3_ACCESS_KEY}\n"
        f"s3proxy.credential={S3_SECRET_KEY}\n"
        # filesystem-nio2: S3Proxy's own store ("filesystem" maps to it in 4.x), whose If-None-Match is atomic
        "jclouds.provider=filesystem-nio2\n"
        "jclouds.identity=lakecompact\n"
        "jclouds.credential=lakecompact\n"
        f"jclouds.filesystem.basedir={S3_DIR / 'data'}\n")
    return conf


class S3(Component):
    """S3Proxy's JVM; ready once it answers a signed request for the stack's bucket, which `wait` creates."""

    name, title = "s3", "S3Proxy"
    stop_timeout = 30

    @property
    def address(self) -> str:
        return f"{S3_ENDPOINT} bucket {S3_BUCKET}"

    def installed(self) -> None:
        """StackError unless install.sh has fetched S3Proxy."""
        _s3proxy_jar()

    def start(self) -> bool:
        if self.pid():
            return False
        jar = _s3proxy_jar()
        conf = _write_conf()
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        log(f"starting S3Proxy ({jar.name}) on {S3_ENDPOINT}, data under {S3_DIR / 'data'}")
        cmd = [java(), "-Xms64m", f"-Xmx{S3_HEAP}", "-Djava.net.preferIPv4Stack=true", service_marker("s3"),
               f"-Dlogback.configurationFile={CONF_DIR / 's3proxy-logback.xml'}",
               "-cp", str(jar), "org.gaul.s3proxy.Main", "--properties", str(conf)]
        spawn("s3", cmd)
        return True

    def ready(self) -> bool:
        """S3Proxy answers a signed request for the stack's bucket."""
        return s3_request("HEAD", timeout=3).status_code == 200

    def wait(self, timeout: float) -> None:
        """Until S3Proxy answers, then the bucket made (or found) and answering."""
        def answers() -> bool:  # any HTTP answer: S3Proxy serves
            requests.get(S3_ENDPOINT + "/", timeout=2)
            return True

        poll(answers, timeout, f"S3Proxy on {S3_ENDPOINT}", log=self.logs(), fail_fast=self.died)
        created = s3_request("PUT")  # 200, or 409 BucketAlreadyOwnedByYou
        if created.status_code not in (200, 409):
            raise StackError(f"creating bucket {S3_BUCKET} failed: HTTP {created.status_code} {created.text}")
        poll(self.ready, 30, f"bucket {S3_BUCKET} on {S3_ENDPOINT}", log=self.logs())


SERVICE = S3()


def stop_s3(timeout: float = 30) -> None:
    SERVICE.stop(timeout)
