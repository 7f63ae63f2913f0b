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
    from .api import create_app

    return WorkerPid(create_app(config_path=config_path))


def serve_waitress(config_path: str | None, host: str, port: int, threads: int) -> None:
    from waitress import serve

    print(f"serving on http://{host}:{port} (1 process, {threads} threads)", file=sys.stderr, flush=True)
    serve(make_app(config_path), host=host, port=port, threads=threads, ident="docs-rag")


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


def serve_gunicorn(config_path: str | None, host: str, port: int, workers: int, threads: int,
                   timeout: int = 120) -> None:
    from gunicorn.app.base import BaseApplication

    class App(BaseApplication):
        def load_config(self) -> None:
            for key, value in {"bind": f"{host}:{port}", "workers": workers, "threads": threads,
                               "worker_class": "gthread", "timeout": timeout, "graceful_timeout": 10,
                               "preload_app": False, "accesslog": None, "errorlog": "-",
                               "loglevel": "warning", "proc_name": "docs-rag"}.items():
                self.cfg.set(key, value)

        def load(self) -> Callable:  # in each worker, after the fork
            limit_native_threads(workers)
            return make_app(config_path)

    print(f"serving on http://{host}:{port} ({workers} processes × {threads} threads, gunicorn)",
          file=sys.stderr, flush=True)
    App().run()
