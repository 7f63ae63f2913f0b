"""Serve benchmark: requests/s and p95 of POST /search under 16 concurrent clients on 127.0.0.1,
against the same searches called in-process from 16 threads (the floor the HTTP layer adds to).

Needs an index: run ``docs-rag ingest`` first (uses the config in DOCS_RAG_CONFIG or ./docs_rag.yaml).
Run: ``python bench/serve.py [--clients 16] [--requests 400]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from docs_rag_pipeline.context import get_context  # noqa: E402
from docs_rag_pipeline.retrieval import search  # noqa: E402
from docs_rag_pipeline.serve.api import create_app  # noqa: E402

QUERIES = ["how does refresh work", "configure a source", "what is stored in data", "chunk size",
           "why was my question refused", "run the Dagster UI", "HTTP API errors", "embedding cache"]


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--threads", type=int, default=8, help="waitress worker threads")
    args = ap.parse_args()
    from waitress.server import create_server

    import tempfile

    from docs_rag_pipeline.config import config_path

    base = config_path()
    cfg = Path(tempfile.mkdtemp()) / "bench.yaml"  # the same config, without the per-client rate limit
    text = base.read_text().replace("storage: data", f"storage: {base.parent / 'data'}")
    text = text.replace("path: docs", f"path: {base.parent / 'docs'}")
    cfg.write_text(text + "\napi:\n  rate_limit_per_minute: 0\n")
    ctx = get_context(cfg)
    search(ctx, "warm up", top_k=5)
    srv = create_server(create_app(config_path=str(cfg)), host="127.0.0.1", port=0, threads=args.threads)
    threading.Thread(target=srv.run, daemon=True).start()
    url = f"http://127.0.0.1:{srv.effective_port}/search"
    session = threading.local()

    def http(q: str) -> None:
        s = getattr(session, "s", None) or requests.Session()
        session.s = s
        r = s.post(url, json={"query": q, "top_k": 5}, timeout=60)
        r.raise_for_status()

    http("warm up")
    direct_rps, direct_lat = run(lambda q: search(ctx, q, top_k=5), args.clients, args.requests)
    http_rps, http_lat = run(http, args.clients, args.requests)
    srv.close()
    print(f"{'path':<22} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8}")
    for name, rps, lat in (("in-process search()", direct_rps, direct_lat), ("POST /search (HTTP)", http_rps, http_lat)):
        print(f"{name:<22} {rps:>8.1f} {statistics.median(lat):>8.1f} {p95(lat):>8.1f}")
    print(f"\nratio HTTP / in-process: throughput {http_rps / direct_rps:.2f}x, p95 {p95(http_lat) / p95(direct_lat):.2f}x "
          f"({args.clients} clients, {args.requests} requests)")


if __name__ == "__main__":
    main()
