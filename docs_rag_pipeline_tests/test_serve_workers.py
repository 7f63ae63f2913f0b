"""``docs-rag serve --workers N``: N processes (gunicorn) answer on one port from one table."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from .conftest import publish_configmap
from .dagster_helpers import index_guide

pytest.importorskip("gunicorn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cfg: Path, *args: str, preexec_fn=None) -> tuple[subprocess.Popen, str]:  # noqa: ANN001
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), "serve",
                             "--port", str(port), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=cfg.parent, env={**os.environ, "DAGSTER_HOME": str(cfg.parent / "dh")},
                            preexec_fn=preexec_fn)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):  # wait for the port (model loading is lazy; the workers start in seconds)
        if proc.poll() is not None:
            pytest.fail(f"docs-rag serve exited {proc.returncode}: {proc.stdout.read()}")
        try:
            requests.get(f"{url}/health", timeout=300)  # the first /health loads the model
            return proc, url
        except requests.ConnectionError:
            time.sleep(0.2)
    proc.terminate()
    pytest.fail("docs-rag serve never listened")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    return out


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    cfg = index_guide(tmp_path_factory.mktemp("serve_workers"))
    cfg.write_text(cfg.read_text() + "\napi:\n  rate_limit_per_minute: 0\n")
    return cfg


def test_two_worker_processes_answer_from_one_table(index):
    proc, url = _start(index, "--workers", "2", "--threads", "1")
    try:
        pids: set[int] = set()

        def one(i: int) -> int:
            r = requests.post(f"{url}/search", json={"query": "ZX81_QUANTUM_FLUX", "top_k": 3}, timeout=120,
                              headers={"Connection": "close"})
            assert r.status_code == 200, r.text
            assert r.json()["hits"][0]["url"].endswith("install.md#troubleshooting")
            return int(r.headers["X-Worker-Pid"])

        with ThreadPoolExecutor(8) as pool:
            for _ in range(25):  # batches of concurrent requests until both workers have answered
                pids |= set(pool.map(one, range(8)))
                if len(pids) >= 2:
                    break
        assert len(pids) == 2, pids
        assert proc.pid not in pids and {_parent(p) for p in pids} == {proc.pid}  # gunicorn's workers
        health = requests.get(f"{url}/health", timeout=60).json()
        assert health["status"] == "ok" and health["sources"]["guide"] > 0
        ans = requests.post(f"{url}/ask", json={"question": "How do I fix the ZX81_QUANTUM_FLUX import error?"},
                            timeout=120).json()
        assert ans["refused"] is False and ans["citations"][0]["url"].endswith("#troubleshooting")
    finally:
        out = _stop(proc)
    assert "2 processes × 1 threads" in out and proc.returncode == 0, out


def test_one_worker_is_waitress_threads(index):
    proc, url = _start(index, "--threads", "4")
    try:
        r = requests.post(f"{url}/search", json={"query": "data binding converters"}, timeout=120)
        assert r.status_code == 200 and int(r.headers["X-Worker-Pid"]) == proc.pid
    finally:
        out = _stop(proc)
    assert "1 process, 4 threads" in out, out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_configmap_update_is_served_by_every_worker_without_a_restart(index, tmp_path, workers):
    """The server kept the path the link led to at its start: after an update of the ConfigMap it read a
    deleted file, and answered 503 to every request until restarted (and, where the old target stays, as
    with a release switch ``current -> v2``, it served the old config without a word)."""
    text = index.read_text().replace("path: docs", f"path: {index.parent / 'docs'}")
    mount = tmp_path / "config"
    publish_configmap(mount, "2026_11_28_09_00_00.1", text)
    proc, url = _start(mount / "docs_rag.yaml", "--workers", workers, "--threads", "1")
    try:
        assert set(requests.get(f"{url}/health", timeout=120).json()["sources"]) == {"guide"}
        publish_configmap(mount, "2026_11_28_09_05_00.2", text.replace("name: guide", "name: manual"))
        for _ in range(12):  # new connections: the workers take turns
            r = requests.get(f"{url}/health", timeout=120, headers={"Connection": "close"})
            assert r.status_code == 200 and r.json()["sources"] == {"manual": 0}, r.text
    finally:
        _stop(proc)


def test_idle_connections_do_not_lock_other_clients_out(index):
    """150 clients that connect and send nothing (idle keep-alive browsers, a slow or hostile client)
    must not stop the server from accepting the next one: waitress's own limit was 100 connections,
    after which nobody was accepted until the idle ones timed out (120 s)."""
    proc, url = _start(index, "--threads", "2")
    idle = []
    try:
        port = int(url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(150)]
        r = requests.get(f"{url}/health", timeout=60, headers={"Connection": "close"})
        assert r.status_code == 200 and r.json()["status"] == "ok"
    finally:
        for s in idle:
            s.close()
        out = _stop(proc)
    assert "connection limit" not in out, out


def _raw_request(url: str, head: str, parts: list[bytes] = ()) -> tuple[int, dict]:  # type: ignore[assignment]
    """Send ``head`` (request line and headers) and ``parts`` of the body over one socket; the status
    and JSON body of the answer. A server that stops reading early may refuse the rest: that is fine."""
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=120) as s:
        s.sendall(head.encode())
        for part in parts:
            try:
                s.sendall(part)
            except OSError:
                break
        data = b""
        while b"\r\n\r\n" not in data:
            got = s.recv(65536)
            assert got, f"the server closed the connection without an answer: {data!r}"
            data += got
        top, _, rest = data.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            got = s.recv(65536)
            if not got:
                break
            rest += got
    return int(lines[0].split()[1]), json.loads(rest[:length] or b"null")


def _chunked(body: bytes, size: int = 8192) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size]) for i in range(0, len(body), size)] + [b"0\r\n\r\n"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_body_over_the_limit_is_refused_before_it_is_read(index, workers):
    """Under waitress a body "over 64 KiB" was read in full (up to 1 GiB, into a temp file, token or
    not) before the 413; under gunicorn a chunked body was cut at 64 KiB without a word (a 400, or an
    answer to its first 64 KiB). Now a Content-Length over the limit is refused once the headers are
    in (the test sends none of the 400 MB), a chunked body once it passes the limit, both with the
    API's JSON 413; a body of exactly 64 KiB, with or without Content-Length, is answered."""
    from docs_rag_pipeline.serve.api import MAX_BODY_BYTES

    proc, url = _start(index, "--workers", workers, "--threads", "2")
    post = "POST /search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
    try:
        status, body = _raw_request(url, post + f"Content-Length: {400 * 2**20}\r\n\r\n")
        assert (status, body["error"]["code"]) == (413, "too_large"), body

        padded = json.dumps({"query": "ZX81_QUANTUM_FLUX", "pad": "x" * 200_000}).encode()
        status, body = _raw_request(url, post + "Transfer-Encoding: chunked\r\n\r\n", _chunked(padded))
        assert (status, body["error"]["code"]) == (413, "too_large"), body

        exact = b'{"query": "ZX81_QUANTUM_FLUX"}'.ljust(MAX_BODY_BYTES)  # JSON may end in white space
        status, body = _raw_request(url, post + f"Content-Length: {len(exact)}\r\n\r\n", [exact])
        assert status == 200 and body["hits"], body
        status, body = _raw_request(url, post + "Transfer-Encoding: chunked\r\n\r\n", _chunked(exact))
        assert status == 200 and body["hits"], body
        status, body = _raw_request(url, post + "Transfer-Encoding: chunked\r\n\r\n", _chunked(exact + b" "))
        assert (status, body["error"]["code"]) == (413, "too_large"), body
    finally:
        _stop(proc)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_servers_own_refusals_are_json_and_gunicorn_takes_what_waitress_takes(index, workers):
    """httpfuzz F2: under --workers N gunicorn's own refusals were HTML pages, and its default limits
    refused what waitress answers: a /pages or /view URL of the documented 4096 characters (414, its
    request line is 4094 bytes at most), a 9 KB Cookie header (431). Both servers now answer those, and
    refuse a malformed request or a head over their limits with the API's JSON error."""
    proc, url = _start(index, "--workers", workers, "--threads", "2")
    get = "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{}\r\n"
    long_url = "https://docs.example.org/" + "a" * (4096 - 25)
    try:
        for route in ("/pages", "/view"):
            status, body = _raw_request(url, get.format(f"{route}?url={long_url}", ""))
            assert (status, body["error"]["code"]) == (404, "not_found"), body
        status, body = _raw_request(url, get.format("/health", "Cookie: sso=" + "c" * 9000 + "\r\n"))
        assert status == 200 and body["status"] == "ok", body
        status, body = _raw_request(url, get.format("/health", "Garbage\r\n"))
        assert (status, body["error"]["code"]) == (400, "bad_request"), body
        status, body = _raw_request(url, get.format("/pages?url=" + "a" * 9000, ""))
        if workers == "1":  # waitress hands it to the app, which says the URL is too long
            assert (status, body["error"]["code"]) == (413, "too_long"), body
        else:
            assert (status, body["error"]["code"]) == (414, "uri_too_long"), body
            assert "8190 bytes" in body["error"]["message"]
            many = "".join(f"X-H{i}: 1\r\n" for i in range(150))
            status, body = _raw_request(url, get.format("/health", many))
            assert (status, body["error"]["code"]) == (431, "headers_too_large"), body
            assert "at most 100 headers" in body["error"]["message"]
    finally:
        _stop(proc)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_clients_script_name_header_changes_nothing(index, workers):
    """httpfuzz F7: gunicorn took a client's SCRIPT_NAME header for the WSGI SCRIPT_NAME when the connection
    came from 127.0.0.1 (a proxy on the same host or pod that passes it on, as Envoy does): every route
    was a 500 (the path does not start with it), or another route. Both servers ignore it now."""
    proc, url = _start(index, "--workers", workers, "--threads", "2")
    try:
        r = requests.get(f"{url}/health", headers={"SCRIPT_NAME": "/x"}, timeout=60)
        assert r.status_code == 200 and r.json()["status"] == "ok", r.text
        r = requests.get(f"{url}/pages", params={"url": "nope.md"}, headers={"SCRIPT_NAME": "/pages"}, timeout=60)
        assert r.status_code == 404 and r.json()["error"]["message"].startswith("no indexed page"), r.text
    finally:
        _stop(proc)


def test_behind_trusted_proxies_the_rate_limit_counts_each_client_by_x_forwarded_for(index, tmp_path):
    """Behind a reverse proxy every client had the proxy's address, so one client's burst used up the
    limit of all of them (and waitress drops ``X-Forwarded-For`` before the app sees it). With
    ``api.trusted_proxies: N`` a request counts under the Nth address from the right of that header
    (each proxy appends the address it was reached from); what a client writes to the left of it
    changes nothing. The key is read per request; with the default 0 the header is ignored."""
    def search(url: str, forwarded: str) -> int:
        return requests.post(f"{url}/search", json={"query": "forms"}, timeout=120,
                             headers={"X-Forwarded-For": forwarded}).status_code

    cfg = tmp_path / "docs_rag.yaml"
    base = index.read_text().replace("path: docs", f"path: {index.parent / 'docs'}")
    cfg.write_text(base.replace("rate_limit_per_minute: 0", "rate_limit_per_minute: 2\n  trusted_proxies: 1"))
    proc, url = _start(cfg, "--workers", "1", "--threads", "2")
    try:
        assert [search(url, "10.0.0.1") for _ in range(3)] == [200, 200, 429]
        assert search(url, "10.0.0.2") == 200  # another client behind the same proxy has its own limit
        # a client that writes its own X-Forwarded-For is still counted under the address the proxy saw
        assert search(url, "10.9.9.9, 10.0.0.1") == 429
        assert search(url, "10.9.9.8, 10.0.0.2") == 200
        assert search(url, "10.0.0.2") == 429
        cfg.write_text(base.replace("rate_limit_per_minute: 0", "rate_limit_per_minute: 1\n  trusted_proxies: 2"))
        assert [search(url, "10.0.0.3, 172.16.0.1"), search(url, "10.0.0.4, 172.16.0.1")] == [200, 200]
        assert search(url, "10.0.0.3, 172.16.0.2") == 429
        cfg.write_text(base.replace("rate_limit_per_minute: 0", "rate_limit_per_minute: 2"))
        # no proxy: the header is a client's word, and every address it names is one client (127.0.0.1)
        assert [search(url, f"10.1.0.{i}") for i in range(3)] == [200, 200, 429]
    finally:
        _stop(proc)


def test_bad_worker_count_is_a_clear_error(index):
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(index), "serve", "--workers",
                          "0"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--workers and --threads must be at least 1" in out.stderr


def test_a_port_it_cannot_listen_on_is_a_clear_error(index):
    """A port in use, out of range (a socket would fold 99999 to 34463 and serve there) or on an address
    this machine does not have: exit 2 with a line that says what to change, before any 'serving on'."""
    def serve(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(index), "serve", *args],
                              capture_output=True, text=True, timeout=120)

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        out = serve("--port", str(taken.getsockname()[1]))
    assert out.returncode == 2 and "Address already in use; stop what uses that port" in out.stderr, out.stderr
    assert "serving on" not in out.stderr and "Traceback" not in out.stderr
    for port in ("99999", "-5", "http"):
        out = serve("--port", port)
        assert out.returncode == 2 and "is not a port number; give one from 1 to 65535" in out.stderr, out.stderr
    out = serve("--host", "host.invalid", "--port", str(_free_port()))
    assert out.returncode == 2 and "unknown host 'host.invalid'" in out.stderr, out.stderr


def test_sigterm_stops_serve_even_when_its_parent_ignored_signals(index):
    """A server started from a script's background job inherits SIGINT (and, after Dagster mapped it,
    SIGTERM) as ignored: it must still stop on SIGTERM."""
    def ignore() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    proc, _ = _start(index, "--threads", "2", preexec_fn=ignore)
    out = _stop(proc)
    assert proc.returncode == -signal.SIGTERM, out


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sighup_leaves_the_server_serving(index, workers):
    """SIGHUP, the usual reload signal, ended `docs-rag serve` (one waitress process) at once and without
    a word, while gunicorn (--workers 2) restarts its workers and goes on serving."""
    proc, url = _start(index, "--workers", workers, "--threads", "2")
    try:
        proc.send_signal(signal.SIGHUP)
        time.sleep(1)  # the old workers finish, new ones start
        for _ in range(600):
            assert proc.poll() is None, proc.stdout.read()
            try:
                r = requests.get(f"{url}/health", timeout=120)
                break
            except requests.ConnectionError:  # gunicorn between its old and new workers
                time.sleep(0.2)
        assert r.status_code == 200, r.text
    finally:
        out = _stop(proc)
    if workers == "1":
        assert "SIGHUP: nothing to reload, the config file is read at each request; still serving" in out, out


def test_each_worker_gets_its_share_of_the_cpus_for_native_threads():
    """In a fresh process (as a gunicorn worker after its fork): numpy's BLAS pool is limited to
    cpus // workers threads, at least 1, and libraries loaded later read the same limit."""
    code = """
import json, os, numpy, threadpoolctl
from docs_rag_pipeline.serve.workers import cpu_count, limit_native_threads
n = limit_native_threads(2)
blas = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
print(json.dumps({"n": n, "cpus": cpu_count(), "blas": blas, "omp": os.environ["OMP_NUM_THREADS"]}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["n"] == max(1, got["cpus"] // 2)
    assert got["blas"] and all(t == got["n"] for t in got["blas"])
    assert got["omp"] == str(got["n"])
