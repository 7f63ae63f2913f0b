"""``storage: s3://bucket/prefix``: the LanceDB tables on a real S3-compatible server (moto's server
mode on 127.0.0.1), credentials and endpoint from the environment; the per-source state stays local."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import GUIDE, write_docs

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

DOCS_RAG = [sys.executable, "-m", "docs_rag_pipeline"]
BUCKET = "docs-rag-test"
PREFIX = "team/prod"
AWS_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ALLOW_HTTP", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
            "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")


@pytest.fixture(scope="module")
def s3_server():
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's request log
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch, tmp_path):
    """This process's environment as a deployment would set it; returns the env for subprocesses."""
    for k in AWS_KEYS:
        monkeypatch.delenv(k, raising=False)
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": s3_server, "AWS_ALLOW_HTTP": "true",
           "DOCS_RAG_CACHE_DIR": str(tmp_path / "cache")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    s3.create_bucket(Bucket=BUCKET)
    yield s3
    for obj in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=obj["Key"])
    s3.delete_bucket(Bucket=BUCKET)


def _s3_config(root: Path) -> Path:
    write_docs(root / "docs", GUIDE)
    cfg = root / "docs_rag.yaml"
    cfg.write_text(f"storage: s3://{BUCKET}/{PREFIX}\nsources:\n  - name: guide\n    kind: local\n    path: docs\n"
                   "    base_url: https://docs.example.org/\n")
    return cfg


def _run(args, cfg: Path, env: dict | None = None):
    env = {**(env if env is not None else os.environ), "DOCS_RAG_CONFIG": str(cfg)}
    env.pop("DAGSTER_HOME", None)  # the default: under the local cache folder
    return subprocess.run([*DOCS_RAG, *args], capture_output=True, text=True, env=env, cwd=cfg.parent,
                          timeout=600)


def _keys(s3) -> list[str]:
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def test_s3_storage_end_to_end(tmp_path, s3_env):
    from dagster import DagsterInstance

    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.query import search

    from .dagster_helpers import materialize_source

    s3 = s3_env
    cfg = _s3_config(tmp_path)
    config = load_config(cfg)
    cache = tmp_path / "cache"
    assert config.lancedb_uri == f"s3://{BUCKET}/{PREFIX}/lancedb"
    assert config.storage_path.parent == cache  # local state: one folder per URI under the cache folder
    assert _keys(s3) == []

    # 1. through real Dagster
    with DagsterInstance.ephemeral() as instance:
        first = materialize_source(cfg, "guide", instance)
    assert first["pages_new"] == 5 and first["rows_written"] > 0 and all(first["_checks"].values())

    # the tables are objects in the bucket, under the prefix; none is on local disk
    keys = _keys(s3)
    tables = {k.split("/")[3] for k in keys if k.startswith(f"{PREFIX}/lancedb/")}
    assert {"embedding_cache.lance", "version_log.lance"} <= tables, tables
    assert any(t.startswith("chunks__") and t.endswith(".lance") for t in tables), tables
    assert all(k.startswith(f"{PREFIX}/lancedb/") for k in keys), keys
    assert not list(cache.rglob("*.lance"))
    # what must stay local is local: the locks, Dagster's IO parquet (and a web/git source's state)
    local = config.storage_path
    assert (local / "locks" / "writer.lock").is_file() and (local / "locks" / "source-guide.lock").is_file()
    assert (local / "dagster_io" / "scraped_pages" / "guide.parquet").is_file()

    hits = search("ZX81_QUANTUM_FLUX", top_k=3, config=cfg)
    assert hits[0].url.endswith("install.md#troubleshooting")

    # 2. through the CLI, a subprocess with only the environment to find the bucket: nothing to write
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    again = json.loads(out.stdout)["guide"]
    assert again["rows_written"] == 0 and again["rows_deleted"] == 0 and again["chunks_embedded"] == 0, again
    assert again["chunks_total"] == first["chunks_total"]
    assert "telemetry" in (local / "dagster_home" / "dagster.yaml").read_text()  # DAGSTER_HOME: local too
    assert not list(cache.rglob("*.lance"))

    hits = json.loads(_run(["search", "data binding converters", "--json"], cfg).stdout)
    assert hits[0]["url"] == "https://docs.example.org/forms/binding.md#converters"
    ans = json.loads(_run(["ask", "How do I fix the ZX81_QUANTUM_FLUX import error?", "--json"], cfg).stdout)
    assert ans["refused"] is False and ans["citations"][0]["url"].endswith("install.md#troubleshooting")

    # one version of the index: the first ingest's (the second wrote nothing)
    versions = json.loads(_run(["versions", "--json"], cfg).stdout)
    assert [v["action"] for v in versions if v["source"] == "guide"] == ["refresh"], versions


def test_s3_storage_cli_ingest_from_scratch(tmp_path, s3_env):
    """A first ingest by the CLI alone writes the tables to the bucket."""
    cfg = _s3_config(tmp_path)
    out = _run(["ingest", "--json"], cfg)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)["guide"]
    assert summary["pages_new"] == 5 and summary["rows_written"] == summary["chunks_total"] > 0
    assert any(k.startswith(f"{PREFIX}/lancedb/chunks__") for k in _keys(s3_env))
    hits = json.loads(_run(["search", "ZX81_QUANTUM_FLUX", "--json"], cfg).stdout)
    assert hits[0]["url"].endswith("install.md#troubleshooting")


@pytest.mark.parametrize("drop, expect", [
    (("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"), "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
    (("AWS_ALLOW_HTTP",), "set AWS_ALLOW_HTTP=true"),
])
def test_s3_storage_without_env_is_a_clear_error(tmp_path, s3_env, drop, expect):
    cfg = _s3_config(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in drop}
    out = _run(["ingest"], cfg, env)
    assert out.returncode == 2, out.stderr
    assert f"storage: 's3://{BUCKET}/{PREFIX}'" in out.stderr or "storage: " in out.stderr
    assert expect in out.stderr and "Traceback" not in out.stderr
    assert _keys(s3_env) == []


def test_an_s3_endpoint_that_never_answers_ends_a_search(tmp_path, s3_env):
    """An endpoint that accepts connections and never answers (a stalled proxy, load balancer or
    MinIO): ``docs-rag search`` waited about 12 minutes in silence under object_store's defaults.
    Requests now time out (``DOCS_RAG_STORAGE_TIMEOUT``, here 1 s) with a short retry budget, so the
    command ends with an error, in far less than this test's 300 s guard."""
    import socket
    import threading

    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(100)
    held: list = []
    threading.Thread(target=lambda: [held.append(hole.accept()) for _ in iter(int, 1)], daemon=True).start()
    cfg = _s3_config(tmp_path)
    env = {**os.environ, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{hole.getsockname()[1]}",
           "DOCS_RAG_STORAGE_TIMEOUT": "1", "DOCS_RAG_CONFIG": str(cfg)}
    env.pop("DAGSTER_HOME", None)
    try:
        out = subprocess.run([*DOCS_RAG, "search", "wombats"], capture_output=True, text=True, env=env,
                             cwd=cfg.parent, timeout=300)
    finally:
        hole.close()
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr[-500:]
    assert held  # it did reach the endpoint


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _forbidding_s3_server():
    """An S3-speaking server that refuses every request as S3 does for a bad key (403 AccessDenied)."""
    return _status_server(403, b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code>'
                               b"<Message>The request signature we calculated does not match the signature you "
                               b"provided.</Message></Error>")


def test_object_store_failures_are_one_plain_line(tmp_path, s3_env):
    """A missing bucket, refused credentials and an endpoint that is down were LanceDB's 800-character
    Rust dump (``Failed to connect to namespace: IO { source: Generic { store: "S3" …``) with exit status
    2, the code for bad input. Each is now one line naming what failed and what to check, exit 69
    (EX_UNAVAILABLE) for a command and a failed step for an ingest."""
    cfg = _s3_config(tmp_path)
    forbid = _forbidding_s3_server()
    cases = [
        ("s3://no-such-bucket/docs", {}, "the bucket 'no-such-bucket' of storage 's3://no-such-bucket/docs/lancedb' "
                                         "does not exist at http://127.0.0.1:"),
        (f"s3://{BUCKET}/{PREFIX}", {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{forbid.server_address[1]}"},
         f"refused access to s3://{BUCKET} (HTTP 403): check AWS_ACCESS_KEY_ID"),
        (f"s3://{BUCKET}/{PREFIX}", {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{_closed_port()}"},
         "cannot reach the object store at http://127.0.0.1:"),
    ]
    try:
        for storage, env, expect in cases:
            cfg.write_text(cfg.read_text().replace(cfg.read_text().splitlines()[0], f"storage: {storage}", 1))
            run_env = {**os.environ, **env}
            out = _run(["search", "wombats"], cfg, run_env)
            lines = out.stderr.strip().splitlines()
            assert out.returncode == 69, (storage, out.returncode, out.stderr[-600:])
            assert len(lines) == 1 and expect in lines[0] and len(lines[0]) < 400, lines
            assert "RetryError" not in out.stderr and "Traceback" not in out.stderr
            out = _run(["ingest"], cfg, run_env)
            failed = [ln for ln in out.stderr.splitlines() if " failed: " in ln]
            assert out.returncode == 1 and failed and all(expect in ln and "RetryError" not in ln for ln in failed), \
                out.stderr[-800:]
    finally:
        forbid.shutdown()
    assert _keys(s3_env) == []


def test_a_deleted_data_object_on_s3_names_the_table_in_the_bucket(tmp_path, s3_env):
    """A data file of the chunks table deleted from the bucket: the damage hint names the table's
    place in the bucket, ``s3://bucket/prefix/lancedb/chunks__….lance`` (it named a path under the local
    cache folder, and a ``Path`` of the URI collapsed its ``//``)."""
    cfg = _s3_config(tmp_path)
    assert _run(["ingest"], cfg).returncode == 0
    data = [k for k in _keys(s3_env) if "/lancedb/chunks__" in k and "/data/" in k and k.endswith(".lance")]
    assert data, _keys(s3_env)
    for key in data:
        s3_env.delete_object(Bucket=BUCKET, Key=key)
    out = _run(["search", "ZX81_QUANTUM_FLUX"], cfg)
    assert out.returncode == 74, out.stderr[-800:]
    table = data[0].split("/")[3]
    assert f"delete s3://{BUCKET}/{PREFIX}/lancedb/{table} and run `docs-rag ingest`" in out.stderr, out.stderr


def test_a_missing_table_file_is_the_damage_hint_not_an_object_store_failure():
    """A 404 naming a file of a table is damage (the hint says how to get back), not "the object
    store answered HTTP 404 … run the command again"."""
    from docs_rag_pipeline.store import object_store_failure

    damaged = ('lance error: Not found: s3://b/p/lancedb/chunks__x.lance/data/01.lance, inner: Status { status: 404, '
               'body: Some("<Error><Code>NoSuchKey</Code></Error>") } store: "S3"')
    assert object_store_failure(damaged, "s3://b/p/lancedb") is None
    bucket = 'Generic { store: "S3", source: ListRequest { inner: Status { status: 404, body: Some("NoSuchBucket") } } }'
    assert "does not exist" in object_store_failure(bucket, "s3://b/p/lancedb")


def _dropping_server():
    """A TCP server that accepts each connection and closes it without an answer: an S3 server
    restarting, a ``kubectl port-forward`` or a TCP load balancer with no live backend."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(50)

    def drop():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)

    threading.Thread(target=drop, daemon=True).start()
    return srv


def _status_server(code: int, body: bytes = b""):
    """An HTTP server that answers ``code`` (and ``body``, as XML, the way S3 writes its errors) to every
    request: a proxy in front of a broken store, or a store that refuses."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Answer(BaseHTTPRequestHandler):
        def _answer(self):
            self.send_response(code)
            if body:
                self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if body and self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_dropped_connection_is_the_cannot_reach_line_without_the_endpoints_password(tmp_path, s3_env):
    """An endpoint that accepts connections and drops them (``error sending request``,
    ``hyper::Error(IncompleteMessage)``) was LanceDB's 800-character Rust dump with exit status 2 for a
    command, and the raw ``LanceError(IO) … /root/.cargo/…`` for an ingest's failed step (also a store that
    went away in the middle of an ingest's write). It is now the one ``cannot reach the object store`` line,
    exit 69. The endpoint is shown without the user name and password an ``AWS_ENDPOINT_URL`` may hold; a
    server that answers 502 is still "answered HTTP 502"."""
    cfg = _s3_config(tmp_path)
    hole, bad_gateway = _dropping_server(), _status_server(502)
    cases = [
        (f"http://minio:S3cr3tPw@127.0.0.1:{hole.getsockname()[1]}",
         f"cannot reach the object store at http://127.0.0.1:{hole.getsockname()[1]} for storage"),
        (f"http://127.0.0.1:{bad_gateway.server_address[1]}", "answered HTTP 502"),
    ]
    try:
        for endpoint, expect in cases:
            run_env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "DOCS_RAG_STORAGE_TIMEOUT": "2"}
            out = _run(["search", "wombats"], cfg, run_env)
            lines = out.stderr.strip().splitlines()
            assert out.returncode == 69, (endpoint, out.returncode, out.stderr[-600:])
            assert len(lines) == 1 and expect in lines[0] and len(lines[0]) < 400, lines
            out = _run(["ingest"], cfg, run_env)
            failed = [ln for ln in out.stderr.splitlines() if " failed: " in ln]
            assert out.returncode == 1 and failed and all(expect in ln for ln in failed), out.stderr[-800:]
            assert ".cargo" not in out.stderr and "S3cr3tPw" not in out.stderr, out.stderr[-800:]
    finally:
        hole.close()
        bad_gateway.shutdown()
    assert _keys(s3_env) == []


def test_a_stray_space_in_the_bucket_is_a_config_error_not_a_local_index(tmp_path, s3_env):
    """``storage: 's3:// bkt/team'`` (a stray space from a template) passed the config check, and
    ``docs-rag ingest`` exited 0 having written the whole index to a local folder ``./s3:/ bkt/team/lancedb``
    under the working directory, nothing to the bucket. It is now a config error before any work."""
    cfg = _s3_config(tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for storage in (f"s3:// {BUCKET}/{PREFIX}", f"s3://{BUCKET} /{PREFIX}"):
        cfg.write_text(cfg.read_text().replace(cfg.read_text().splitlines()[0], f"storage: '{storage}'", 1))
        out = subprocess.run([*DOCS_RAG, "ingest"], capture_output=True, text=True, cwd=cwd, timeout=600,
                             env={**os.environ, "DOCS_RAG_CONFIG": str(cfg)})
        assert out.returncode == 2, out.stderr[-600:]
        assert f"storage: '{storage}': the bucket " in out.stderr and "is not a valid bucket name" in out.stderr
        assert not list(cwd.rglob("*")) and not list(tmp_path.glob("s3:*")), list(cwd.rglob("*"))
    assert _keys(s3_env) == []
