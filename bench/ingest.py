"""Ingest and refresh benchmarks on a real docs site served on 127.0.0.1.

The site: Sphinx's own HTML manual from Debian's ``sphinx-doc`` package (installed if missing and
root), served by ``http.server`` with ETag / Last-Modified. Measured in one process:

- ingest: a full build per stage (crawl+parse, chunk, embed, index) against the floor — embedding
  the same chunk texts with the same model and nothing else. Goal: total ≤ 1.25× the floor.
- memory: the process's peak RSS (``ru_maxrss``) after the warm-up and after the full build, and the
  growth per chunk: a small-site figure (the model's own memory dominates), not a sizing rule.
- refresh: the same site again with no change, then with one page edited: time against the full
  build, bodies downloaded (from the server's access log), chunks embedded. Goal: no-change ≤ 5%.

Run: ``python bench/ingest.py``.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docs_rag_pipeline.config import parse_config  # noqa: E402
from docs_rag_pipeline.context import Context  # noqa: E402
from docs_rag_pipeline.refresh import embedding_text, refresh  # noqa: E402
from docs_rag_pipeline_tests.web_helpers import static_server  # noqa: E402

SITE = Path("/usr/share/doc/sphinx-doc/html")


def ensure_site() -> None:
    if SITE.is_dir():
        return
    if os.geteuid() != 0:
        sys.exit(f"{SITE} is missing: apt-get install sphinx-doc")
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "sphinx-doc"], check=True,
                   capture_output=True)


def bodies(server, since: int) -> int:
    """Page bodies sent (200s); 404 error pages of broken links don't count."""
    return sum(1 for a in server.access[since:] if a.body and int(a.status) == 200)


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ensure_site()
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        shutil.copytree(SITE, site, ignore=shutil.ignore_patterns("_sources", "_modules", "_downloads", "_images"))
        with static_server(site) as server:
            raw = {"storage": str(Path(tmp) / "data"), "sources": [{
                "name": "sphinx", "kind": "web", "seed_urls": [f"{server.url}/index.html"], "delay_seconds": 0,
                "max_pages": 2000, "deny_patterns": [r"/_static/", r"genindex", r"search\.html", r"py-modindex"],
                "sitemaps": "off"}]}
            ctx = Context(parse_config(raw, root=Path(tmp)))
            # warm up every model the timed runs use, so neither the ingest nor the floor pays a load: a short
            # batch (the numpy path, used for an ingest's last small step) and one past `numpy_max_texts`
            # (sentence-transformers, used for the ingest's steps of 2048 texts and for the floor's one call)
            ctx.embedder.embed(["warm up the model"])
            ctx.embedder.embed(["warm up the model"] * (getattr(ctx.embedder, "numpy_max_texts", 0) + 1))
            rss_warm = peak_rss_mb()
            full = refresh(ctx, "sphinx")
            rss_full = peak_rss_mb()
            pages = full.pages_new
            # the floor: exactly the texts the pipeline embedded (title, headings, text), same model
            emb_texts = [embedding_text(r) for r in ctx.chunks.rows("source = 'sphinx'")]
            t0 = time.perf_counter()
            ctx.embedder.embed(emb_texts)  # one call: the model batches and length-sorts as it likes
            floor = time.perf_counter() - t0

            n_access = len(server.access)
            same = refresh(ctx, "sphinx")
            same_bodies = bodies(server, n_access)

            target = next(p for p in sorted(site.rglob("*.html")) if "usage" in str(p))
            html = target.read_text(encoding="utf-8")
            at = html.index("</p>", html.index('role="main"'))  # a paragraph of the main content
            target.write_text(html[:at] + " This sentence was added by the refresh benchmark." + html[at:],
                              encoding="utf-8")
            n_access = len(server.access)
            edited = refresh(ctx, "sphinx")
            edited_bodies = bodies(server, n_access)

    st = full.stage_seconds
    print(f"ingest: {pages} pages, {full.chunks_total} chunks ({full.chunks_embedded} embedded)")
    print(f"{'stage':<16} {'seconds':>8}")
    for k in ("scan", "chunk", "embed", "index"):
        print(f"{k:<16} {st[k]:>8.2f}")
    print(f"{'total':<16} {full.seconds:>8.2f}")
    print(f"{'floor (embed)':<16} {floor:>8.2f}")
    print(f"peak RSS: {rss_warm:.0f} MB after the warm-up (models loaded), {rss_full:.0f} MB after the full build "
          f"(+{rss_full - rss_warm:.0f} MB, {(rss_full - rss_warm) * 1024 / max(full.chunks_total, 1):.0f} KB per chunk)")
    print()
    print(f"{'refresh':<20} {'seconds':>8} {'bodies':>7} {'embedded':>9} {'written':>8} {'deleted':>8}")
    for name, s, b in (("full build", full, pages), ("no change", same, same_bodies), ("one page edited", edited, edited_bodies)):
        print(f"{name:<20} {s.seconds:>8.2f} {b:>7} {s.chunks_embedded:>9} {s.rows_written:>8} {s.rows_deleted:>8}")
    print()
    print(f"ratio ingest total / embedding floor: {full.seconds / floor:.2f}x (goal ≤ 1.25x)")
    print(f"ratio no-change refresh / full build: {same.seconds / full.seconds:.1%} (goal ≤ 5%), "
          f"{same.chunks_embedded} embedded, {same_bodies} bodies downloaded")
    print(f"ratio one-page refresh / full build: {edited.seconds / full.seconds:.1%}, {edited.chunks_embedded} embedded, "
          f"{edited_bodies} bodies downloaded")


if __name__ == "__main__":
    main()
