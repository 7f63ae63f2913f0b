"""The environment knobs of docs/deploy.md: a Dagster pool for the LanceDB writers, the IO manager's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import GUIDE, write_config, write_docs

POOLS = """
import json
from docs_rag_pipeline.defs.assets import ingest_assets
print(json.dumps({a.key.to_user_string(): a.op.pool for a in ingest_assets}))
"""


def _pools(env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", POOLS], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_writer_pool_from_the_environment():
    env = {k: v for k, v in os.environ.items() if k != "DOCS_RAG_WRITER_POOL"}
    assert set(_pools(env).values()) == {None}
    pools = _pools({**env, "DOCS_RAG_WRITER_POOL": "lancedb_writer"})
    assert pools == {"scraped_pages": None, "chunks": None, "embeddings": "lancedb_writer",
                     "lancedb_chunks": "lancedb_writer"}, pools


def test_io_manager_folder_from_the_environment(tmp_path: Path):
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    io = tmp_path / "shared-io"
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh"),
           "DOCS_RAG_DAGSTER_IO": str(io)}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest", "--json"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["guide"]["rows_written"] > 0
    assert {p.parent.name for p in io.rglob("guide.parquet")} == {"scraped_pages", "chunks", "embeddings"}
    assert not (tmp_path / "data" / "dagster_io").exists()
