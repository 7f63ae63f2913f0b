"""``docs-rag ingest --parallel N``: sources ingested in N processes at once, their LanceDB writes
serialized by the writer lock (locks.py), as its history and the version log show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from docs_rag_pipeline import locks
from docs_rag_pipeline.config import load_config

from .conftest import GUIDE, write_config, write_docs

HANDBOOK = {
    "oncall.md": """
        # On-call handbook

        The on-call engineer answers pages within fifteen minutes and writes the incident log.

        ## Escalation

        Escalate to the platform lead when the QUOKKA_7 alarm fires twice in one hour.
    """,
    "releases.md": """
        # Releases

        Releases are cut every second Tuesday from the main branch, after the staging soak test.
    """,
}

SOURCES = """
  - name: guide
    kind: local
    path: docs
    base_url: https://docs.example.org/
  - name: handbook
    kind: local
    path: handbook
    base_url: https://handbook.example.org/
"""


def test_parallel_ingest_serializes_the_writes(tmp_path: Path):
    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "handbook", HANDBOOK)
    cfg = write_config(tmp_path, sources=SOURCES)
    config = load_config(cfg)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    lines: list[str] = []
    both_waiting = threading.Event()

    def waiting(name: str) -> bool:
        return any(line.startswith(f"[{name}]") and "[LOCK] waiting" in line and "writer lock" in line
                   for line in lines)

    # the test holds the writer lock, so both processes must reach their first write and wait for it:
    # when it is released they contend, and only the lock keeps their writes apart
    with locks.writer_lock(config.storage_path, purpose="test: hold until both ingests wait"):
        proc = subprocess.Popen([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--parallel", "2", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)

        def read() -> None:
            for line in proc.stderr:
                lines.append(line)
                if waiting("guide") and waiting("handbook"):
                    both_waiting.set()
            both_waiting.set()  # the process ended: the assertions below say why

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        both_waiting.wait(timeout=540)
        assert waiting("guide") and waiting("handbook"), "".join(lines)
    stdout = proc.stdout.read()
    proc.wait(timeout=540)
    reader.join(timeout=60)
    log = "".join(lines)
    assert proc.returncode == 0, log
    assert "ingesting 2 sources in 2 processes" in log
    summaries = json.loads(stdout)
    assert set(summaries) == {"guide", "handbook"}
    assert summaries["guide"]["pages_new"] == 5 and summaries["handbook"]["pages_new"] == 2
    assert "[guide] [LOCK] got the writer lock after waiting" in log
    assert "[handbook] [LOCK] got the writer lock after waiting" in log

    # the writer lock's history: every hold by the two ingest processes, none overlapping another
    holds = [h for h in locks.history(config.storage_path, "writer") if h["pid"] != os.getpid()]
    pids = {h["pid"] for h in holds}
    assert len(pids) == 2 and os.getpid() not in pids, holds
    purposes = " | ".join(h["purpose"] for h in holds)
    assert "index write of guide" in purposes and "index write of handbook" in purposes, purposes
    holds.sort(key=lambda h: h["acquired"])
    for before, after in zip(holds, holds[1:]):
        assert after["acquired"] >= before["released"], (before, after)
    # and the two processes' first holds both began with a wait (the contention the lock resolved)
    first = {pid: next(h for h in holds if h["pid"] == pid) for pid in pids}
    assert all(h["waited"] for h in first.values()), first

    # the table: every chunk once, each source complete; one version per source's index write
    from docs_rag_pipeline.context import Context

    ctx = Context(config)
    rows = ctx.chunks.open().to_arrow().select(["chunk_id", "source"]).to_pylist()
    ids = [r["chunk_id"] for r in rows]
    assert len(ids) == len(set(ids)) == summaries["guide"]["chunks_total"] + summaries["handbook"]["chunks_total"]
    assert {r["source"] for r in rows} == {"guide", "handbook"}
    from docs_rag_pipeline.refresh import versions

    vs = [v for v in versions(ctx) if v["action"] == "refresh"]
    assert sorted(v["source"] for v in vs) == ["guide", "handbook"], vs
    assert len({v["version"] for v in vs}) == 2

    # both are searchable
    from docs_rag_pipeline.query import search

    assert search("QUOKKA_7 alarm", top_k=3, config=cfg)[0].url.startswith("https://handbook.example.org/oncall.md")
    assert search("ZX81_QUANTUM_FLUX", top_k=3, config=cfg)[0].url.endswith("install.md#troubleshooting")


def test_parallel_must_be_positive(tmp_path: Path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), "ingest", "--parallel", "0"],
                         capture_output=True, text=True, env={**os.environ, "DAGSTER_HOME": str(tmp_path / "dh")})
    assert out.returncode == 2 and "--parallel must be at least 1" in out.stderr
