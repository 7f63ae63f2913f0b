"""Serve benchmark: requests/s and p50/p95 of POST /search under 16 concurrent clients on 127.0.0.1,
for ``docs-rag serve`` with 1 worker process (waitress, 8 threads) and with 2 worker processes
(gunicorn, 4 threads each: the same 8 threads in all), side by side with the baseline: the same
searches called in-process from 16 threads (one Python process, the floor the HTTP layer adds to).

It builds its own index: the project's docs/ folder, ingested by ``docs-rag ingest`` into a
temporary storage. The servers are real ``docs-rag serve`` subprocesses; each worker is warmed up
(its model loaded) before the clock starts. The three sides are measured in turn over several rounds
(3 by default, the order rotated each round, a fresh server per round) and each row is the median over
the rounds, with the range of requests/s, so a burst of other work on a shared machine shows as a wide
range rather than as one side's figure. The temporary storage is removed at the end.
Run: ``python bench/serve.py [--clients 16] [--requests 240] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERIES = ["how does refresh work", "configure a source", "what is stored in data", "chunk size",
           "why was my question refused", "run the Dagster UI", "HTTP API errors", "embedding cache"]
DOCS_RAG = [sys.executable, "-m", "docs_rag_pipeline"]


def run(fn, clients: int, total: int) -> tuple[float, list[float]]:
    lat: list[float] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        t = time.perf_counter()
        fn(QUERIES[i % len(QUERIES)])
        with lock:
            lat.append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(one, range(total)))
    return total / (time.perf_counter() - t0), lat


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(0.95 * (len(xs) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_index(tmp: Path) -> Path:
    cfg = tmp / "docs_rag.yaml"
    cfg.write_text(f"storage: {tmp / 'data'}\napi:\n  rate_limit_per_minute: 0\nsources:\n"
                   f"  - name: project-docs\n    kind: local\n    path: {ROOT / 'docs'}\n"
                   "    base_url: https://docs.example.org/\n")
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp / "dagster_home")}
    out = subprocess.run([*DOCS_RAG, "ingest"], env=env, capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"ingest failed:\n{out.stderr[-3000:]}")
    return cfg


def http_bench(cfg: Path, workers: int, threads: int, clients: int, total: int) -> tuple[float, list[float], int]:
    port = free_port()
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(cfg.parent / "dagster_home")}
    proc = subprocess.Popen([*DOCS_RAG, "serve", "--port", str(port), "--workers", str(workers), "--threads",
                             str(threads)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/search"
    session = threading.local()

    def http(q: str) -> int:
        s = getattr(session, "s", None) or requests.Session()
        session.s = s
        r = s.post(url, json={"query": q, "top_k": 5}, timeout=120)
        r.raise_for_status()
        return int(r.headers.get("X-Worker-Pid", 0))

    try:
        for _ in range(600):
            try:
                requests.get(url.replace("/search", "/health"), timeout=300)  # loads the model
                break
            except requests.ConnectionError:
                time.sleep(0.2)
        pids: set[int] = set()
        with ThreadPoolExecutor(clients) as pool:  # warm up: every worker has loaded its model
            for _ in range(50):
                pids |= set(pool.map(lambda i: http(QUERIES[i % len(QUERIES)]), range(clients)))
                if len(pids) >= workers:
                    break
        rps, lat = run(http, clients, total)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    return rps, lat, len(pids)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=240)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-", ignore_cleanup_errors=True) as tmp_dir:
        cfg = build_index(Path(tmp_dir))
        os.environ["DOCS_RAG_CONFIG"] = str(cfg)

        from docs_rag_pipeline.context import get_context
        from docs_rag_pipeline.retrieval import search

        ctx = get_context(cfg)
        search(ctx, "warm up", top_k=5)
        chunks = ctx.chunks.count()
        order = ["direct", "one", "two"]
        http_sides = {"one": (1, 8), "two": (2, 4)}  # workers, threads per worker
        results: dict[str, list[tuple[float, list[float], int]]] = {k: [] for k in order}
        for r in range(args.rounds):  # interleaved: each round runs every side, starting from another one
            for name in order[r % len(order):] + order[:r % len(order)]:
                if name == "direct":
                    rps, lat = run(lambda q: search(ctx, q, top_k=5), args.clients, args.requests)
                    results[name].append((rps, lat, 1))
                else:
                    results[name].append(http_bench(cfg, *http_sides[name], args.clients, args.requests))

    def med_rps(name: str) -> float:
        return statistics.median(x[0] for x in results[name])

    def med(name: str, f) -> float:  # noqa: ANN001
        return statistics.median(f(x[1]) for x in results[name])

    seen = min(x[2] for x in results["two"])
    print(f"index: the project's docs/ ({chunks} chunks); {args.clients} clients, {args.requests} requests; "
          f"{os.cpu_count()} cores; median of {args.rounds} interleaved rounds")
    print(f"{'path':<44} {'req/s':>8} {'range':>13} {'p50 ms':>8} {'p95 ms':>8}")
    for name, label in (("direct", "in-process search(), 16 threads (baseline)"),
                        ("one", "HTTP, 1 worker (waitress, 8 threads)"),
                        ("two", "HTTP, 2 workers (gunicorn, 2 x 4 threads)")):
        rps = [x[0] for x in results[name]]
        print(f"{label:<44} {med_rps(name):>8.1f} {min(rps):>6.1f}-{max(rps):<6.1f} "
              f"{med(name, statistics.median):>8.1f} {med(name, p95):>8.1f}")
    print(f"\nratio 2 workers / 1 worker: throughput {med_rps('two') / med_rps('one'):.2f}x, "
          f"p95 {med('two', p95) / med('one', p95):.2f}x ({seen} worker pids answered in every round)")
    print(f"ratio 1 worker / in-process: throughput {med_rps('one') / med_rps('direct'):.2f}x; "
          f"2 workers / in-process: {med_rps('two') / med_rps('direct'):.2f}x")


if __name__ == "__main__":
    main()
