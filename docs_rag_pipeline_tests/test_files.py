"""Writing a file whole or not at all, with the mode a plain write gives it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from docs_rag_pipeline.files import atomic_write


def test_an_atomic_write_keeps_the_mode_a_plain_write_gives(tmp_path: Path) -> None:
    """mkstemp makes its file 0600: every file written whole (an exported cases file, the eval
    results, a crawl's cache) was unreadable to the rest of a team, whatever the umask."""
    old = os.umask(0o022)
    try:
        new = tmp_path / "cases.jsonl"
        atomic_write(new, b"{}\n")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644 and new.read_bytes() == b"{}\n"
        kept = tmp_path / "latest.json"
        kept.write_bytes(b"old")
        kept.chmod(0o640)
        atomic_write(kept, b"new")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_bytes() == b"new"
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    finally:
        os.umask(old)
