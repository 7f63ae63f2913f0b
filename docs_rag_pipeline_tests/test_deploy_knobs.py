"""The environment knobs of docs/deploy.md: a Dagster pool for the LanceDB writers, the IO manager's folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("name, value, needle", [
    ("DOCS_RAG_LOCK_TIMEOUT", "nan", "is not a positive number of seconds; set it to e.g. 600"),  # waited forever
    ("DOCS_RAG_LOCK_TIMEOUT", "inf", "is not a positive number of seconds"),
    ("DOCS_RAG_STORAGE_TIMEOUT", "inf", "is not a positive number of seconds (at most 86400); set it to e.g. 60"),
    ("DOCS_RAG_STORAGE_TIMEOUT", "abc", "is not a positive number of seconds"),  # was silently 30
    ("DOCS_RAG_STORAGE_TIMEOUT", "-5", "is not a positive number of seconds"),  # was silently 1
    ("DOCS_RAG_DAGSTER_IO", "bogus://x", "'bogus://' is not a storage scheme fsspec knows"),  # exit 1, no error line
    ("DOCS_RAG_DAGSTER_IO", "/proc/nope", "the folder '/proc/nope' cannot be created"),
    ("DOCS_RAG_WRITER_POOL", "lancedb writer", "is not a valid Dagster pool name (no spaces); set it to e.g. "
                                               "lancedb_writer"),  # a Dagster traceback at import
])
def test_a_bad_deploy_variable_stops_an_ingest_with_one_line_naming_it(tmp_path: Path, name: str, value: str,
                                                                        needle: str):
    """configfuzz F4, F5, F12, F13: each DOCS_RAG_* knob is checked where it is read (environment.py), and
    `docs-rag ingest` reads them all before Dagster starts: one line naming the variable and value, exit 2."""
    write_docs(tmp_path / "docs", GUIDE)
    cfg = write_config(tmp_path)
    env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "DAGSTER_HOME": str(tmp_path / "dh"), name: value}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "ingest"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {name}: "), out.stderr
    assert needle in lines[0] and "Traceback" not in out.stderr
    assert not (tmp_path / "data" / "lancedb").exists()  # nothing started


def test_a_bad_storage_timeout_stops_a_search_on_object_storage(tmp_path: Path):
    """configfuzz F5: `inf` was a LanceDB traceback ('failed to parse "infs" as Duration') on every command."""
    (tmp_path / "docs").mkdir()
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text("storage: s3://bkt/docs\nsources:\n  - {name: d, kind: local, path: docs}\n")
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ALLOW_HTTP": "true",
           "DOCS_RAG_CACHE_DIR": str(tmp_path / "cache"), "DOCS_RAG_STORAGE_TIMEOUT": "inf"}
    out = subprocess.run([sys.executable, "-m", "docs_rag_pipeline", "--config", str(cfg), "search", "hello"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: DOCS_RAG_STORAGE_TIMEOUT: 'inf' is not a positive number of seconds")
    assert "Traceback" not in out.stderr


def test_a_blank_writer_pool_is_unset():
    """configfuzz F13: `DOCS_RAG_WRITER_POOL=" "` (an empty template value) means no pool."""
    env = {**os.environ, "DOCS_RAG_WRITER_POOL": " "}
    assert set(_pools(env).values()) == {None}


def test_a_lock_timeout_of_nan_is_refused(monkeypatch):
    """configfuzz F4: `nan <= 0` is false, so nan passed and the deadline never came."""
    from docs_rag_pipeline import locks

    monkeypatch.setenv("DOCS_RAG_LOCK_TIMEOUT", "nan")
    with pytest.raises(ValueError, match="DOCS_RAG_LOCK_TIMEOUT: 'nan' is not a positive number of seconds"):
        locks.default_timeout()
