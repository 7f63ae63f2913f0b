"""``docs-rag serve``: the Flask app under waitress (one process, ``--threads`` threads) or, with
``--workers N`` > 1, under gunicorn: N worker processes (each with ``--threads`` threads) that share
the port and read the same LanceDB table. Each worker builds its own app (no ``preload``): LanceDB's
and torch's threads are never forked; each limits its native thread pools to its share of the CPUs
(:func:`limit_native_threads`). A response names the process that answered in ``X-Worker-Pid``.

The per-client rate limit (``api.rate_limit_per_minute``) is counted per worker process.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Iterable

WORKER_PID_HEADER = "X-Worker-Pid"


class WorkerPid:
    """WSGI middleware: adds ``X-Worker-Pid: <pid>`` to every response."""

    def __init__(self, app: Callable) -> None:
        self.app = app

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None):  # noqa: ANN202
            return start_response(status, [*headers, (WORKER_PID_HEADER, str(os.getpid()))], exc_info)

        return self.app(environ, start)


def make_app(config_path: str | None) -> Callable:
    from ..context import warm_up
    from .api import create_app

    app = WorkerPid(create_app(config_path=config_path))
    warm_up(config_path)  # each process counts the index's words at start, not on its first ask
    return app


def check_bind(host: str, port: int) -> None:
    """Raise OSError (with the reason: address in use, not an address of this machine, unknown host)
    when ``host:port`` cannot be listened on, before a server starts and says it serves there."""
    import errno
    import socket

    where = f"cannot listen on {host}:{port}"
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise OSError(f"{where}: unknown host {host!r} ({exc.strerror}); give an address of this machine "
                      "with --host, e.g. 127.0.0.1 or 0.0.0.0") from None
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers do: TIME_WAIT is no conflict
        try:
            s.bind(addr)
        except OSError as exc:
            hint = ("stop what uses that port or pick another with --port" if exc.errno == errno.EADDRINUSE else
                    "give an address of this machine with --host, e.g. 127.0.0.1 or 0.0.0.0"
                    if exc.errno == errno.EADDRNOTAVAIL else "pick a port above 1023 with --port, or run as root"
                    if exc.errno == errno.EACCES else "check --host and --port")
            raise OSError(f"{where}: {exc.strerror or exc}; {hint}") from None


#: open connections waitress keeps (its default, 100, is reached by a few idle or slow clients, or by
#: a dozen browsers holding 6 keep-alive connections each, and then nobody else is accepted) and the
#: seconds of silence after which it closes one (its default: 120), checked every 10 s
CONNECTION_LIMIT = 1000
CHANNEL_TIMEOUT = 30


def raise_open_files_limit(wanted: int) -> int:
    """Raise this process's soft limit on open files to ``wanted`` (at most the hard limit): each
    connection is a file descriptor, and 1024, a common soft limit, leaves no room for the table's
    files beside 1000 connections. Returns the limit now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):  # pragma: no cover - not allowed here: keep what there is
            pass
    return soft


#: what waitress's own refusals are called in the API's JSON errors (the rest: the reason in lower case)
_WAITRESS_ERRORS = {400: "bad_request", 413: "too_large", 431: "headers_too_large", 501: "not_implemented"}


def _json_errors(server: Any) -> None:
    """Waitress's own refusals (a body over the limit, headers too large, a malformed request) as the
    API's JSON errors, as docs/interfaces/http.md promises for every error, instead of plain text."""
    import json

    from waitress.channel import HTTPChannel
    from waitress.task import ErrorTask

    from .api import MAX_BODY_BYTES

    class JsonErrorTask(ErrorTask):
        def execute(self) -> None:
            e = self.request.error
            code = _WAITRESS_ERRORS.get(e.code) or e.reason.lower().replace(" ", "_")
            message = (f"the request body is larger than {MAX_BODY_BYTES} bytes" if e.code == 413
                       else f"{e.reason}: {e.body}")
            body = json.dumps({"error": {"code": code, "message": message, "trace_id": None}}).encode()
            self.status = f"{e.code} {e.reason}"
            self.response_headers.append(("Content-Type", "application/json"))
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonErrorChannel(HTTPChannel):
        error_task_class = JsonErrorTask

    servers = [server] if hasattr(server, "channel_class") else list(getattr(server, "map", {}).values())
    for one in servers:
        if hasattr(one, "channel_class"):
            one.channel_class = JsonErrorChannel


def serve_waitress(config_path: str | None, host: str, port: int, threads: int) -> None:
    import logging

    from waitress import create_server

    from .api import MAX_BODY_BYTES

    logging.basicConfig()  # as waitress.serve does: its warnings (queue depth) reach stderr
    files = raise_open_files_limit(CONNECTION_LIMIT + 256)
    limit = CONNECTION_LIMIT if files == -1 else max(100, min(CONNECTION_LIMIT, files - 256))
    # a body far over the limit is refused once its headers say so (or, chunked, once that much came);
    # waitress's default, 1 GiB, buffered all of it into a temp file first, token or not. Twice the
    # API's limit, as waitress counts a chunked body's framing too: the API refuses what lies between.
    server = create_server(make_app(config_path), host=host, port=port, threads=threads, ident="docs-rag",
                           connection_limit=limit, channel_timeout=CHANNEL_TIMEOUT, cleanup_interval=10,
                           max_request_body_size=2 * MAX_BODY_BYTES,
                           # X-Forwarded-For reaches the app, which trusts it only as api.trusted_proxies
                           # says (read per request); waitress dropped it, as gunicorn does not
                           clear_untrusted_proxy_headers=False)
    _json_errors(server)
    _hup_is_no_stop()
    print(f"serving on http://{host}:{server.effective_port} (1 process, {threads} threads)", file=sys.stderr, flush=True)
    server.run()


def _hup_is_no_stop() -> None:
    """SIGHUP, the usual "reload your config" (logrotate, systemd's ExecReload, an operator after an
    edit), ended the one waitress process at once, without a word, where gunicorn (``--workers N``)
    starts new workers and goes on serving. The config is read at each request: there is nothing to
    reload, so the server says so and goes on."""
    import signal
    import threading

    if not hasattr(signal, "SIGHUP") or threading.current_thread() is not threading.main_thread():
        return

    def hup(signum: int, frame: Any) -> None:
        print("SIGHUP: nothing to reload, the config file is read at each request; still serving",
              file=sys.stderr, flush=True)

    signal.signal(signal.SIGHUP, hup)


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def limit_native_threads(workers: int) -> int:
    """Give each of ``workers`` processes its share of the CPUs for native thread pools (OpenBLAS,
    OpenMP, torch): ``cpus // workers``, at least 1. Each process would otherwise start a pool the
    size of the machine, and OpenBLAS threads spin while they wait: on 2 cores, 2 workers with
    default pools served 0.23× the requests of 1 worker, with one thread each 1.61×
    (bench/serve.py). Returns the limit."""
    n = max(1, cpu_count() // max(1, workers))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)  # for libraries loaded later in this process
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=n)  # for those loaded already (numpy's OpenBLAS)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
    return n


#: gunicorn's limits on a request's head. Its defaults (a request line of 4094 bytes, a header of 8190)
#: refused, as HTML pages, what waitress (``--workers 1``) answers: a /pages or /view URL within the
#: documented 4096 characters, a browser's Cookie header over 8 KB. 8190 is the longest request line
#: gunicorn allows (0 would be no limit at all); a header may be 32 KiB, up to 100 of them.
GUNICORN_REQUEST_LINE = 8190
GUNICORN_HEADER_BYTES = 32 * 1024
GUNICORN_HEADERS = 100
#: what gunicorn's own refusals are called in the API's JSON errors (the rest: the reason in lower case)
_GUNICORN_ERRORS = {400: "bad_request", 414: "uri_too_long", 431: "headers_too_large", 500: "internal_error",
                    501: "not_implemented"}


def _gunicorn_json_errors() -> None:
    """gunicorn's own refusals (a request line or header over its limits, a malformed request) as the
    API's JSON errors, as docs/interfaces/http.md promises for every error: gunicorn writes them with
    ``gunicorn.util.write_error`` as an HTML page. Called in each worker process (only the workers write
    them); the function is looked up at each call, so replacing it is enough."""
    import json

    from gunicorn import util

    def write_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
        code = _GUNICORN_ERRORS.get(status_int) or reason.lower().replace(" ", "_")
        message = f"{reason}: {mesg}" if mesg else reason
        if status_int == 414:
            message += (f"; the request line (method, path and query) may be at most {GUNICORN_REQUEST_LINE} "
                        "bytes under --workers N")
        elif status_int == 431:
            message += (f"; a header may be at most {GUNICORN_HEADER_BYTES} bytes, and a request may have at "
                        f"most {GUNICORN_HEADERS} headers")
        body = json.dumps({"error": {"code": code, "message": message, "trace_id": None}}).encode()
        head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n")
        util.write_nonblock(sock, head.encode("latin-1") + body)

    util.write_error = write_error


def serve_gunicorn(config_path: str | None, host: str, port: int, workers: int, threads: int,
                   timeout: int = 120) -> None:
    from gunicorn.app.base import BaseApplication

    class App(BaseApplication):
        def load_config(self) -> None:
            for key, value in {"bind": f"{host}:{port}", "workers": workers, "threads": threads,
                               "worker_class": "gthread", "timeout": timeout, "graceful_timeout": 10,
                               "preload_app": False, "accesslog": None, "errorlog": "-",
                               "loglevel": "warning", "proc_name": "docs-rag",
                               "limit_request_line": GUNICORN_REQUEST_LINE,
                               "limit_request_field_size": GUNICORN_HEADER_BYTES,
                               "limit_request_fields": GUNICORN_HEADERS,
                               # a client's SCRIPT_NAME/PATH_INFO header (passed on by a proxy on 127.0.0.1,
                               # gunicorn's default forwarder) moved the routes or made every route a 500;
                               # waitress takes no such header either
                               "forwarder_headers": ""}.items():
                self.cfg.set(key, value)

        def load(self) -> Callable:  # in each worker, after the fork
            limit_native_threads(workers)
            _gunicorn_json_errors()
            return make_app(config_path)

    print(f"serving on http://{host}:{port} ({workers} processes × {threads} threads, gunicorn)",
          file=sys.stderr, flush=True)
    App().run()
