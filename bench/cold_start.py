"""Cold start of ``docs-rag search``: a fresh process per query, as a shell user runs it.

Indexes a small guide once, then times ``python -m docs_rag_pipeline search …`` in new processes,
interleaved with the same command run on the baseline code (the commit before the numpy query
encoder, exported with ``git archive``; ``--baseline REF`` picks another) and with two floors: the
interpreter alone and ``import docs_rag_pipeline``. Prints median and min wall time per command,
the ratio to the baseline and where the import time goes (``-X importtime``, by top-level package).
Goal: a cold search ≤ 3 s on the 2-core dev VM. Run: ``python bench/cold_start.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUERY = "how does a converter turn typed text into a datetime"
PAGES = {
    "index.md": "# Acme Widgets Guide\n\nAcme Widgets builds dashboards from sensor data.\n",
    "install.md": "# Installing\n\nInstall the package with pip. Python 3.11 or newer is required.\n\n"
                  "## Troubleshooting\n\nIf the import fails, delete the cache folder and install again.\n",
    "forms.md": "# Forms\n\nForms collect user input and validate it.\n\n## Validation\n\n"
                "Every field can carry validators that return an error message.\n",
    "binding.md": "# Data binding\n\nBinding connects a form field to a property.\n\n### Converters\n\n"
                  "A converter turns the text typed by the user into the property's type, e.g. a datetime.\n",
}


def baseline_ref() -> str | None:
    """The parent of the commit that added numpy_bert.py (the torch-only query path)."""
    try:
        added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--",
                                "docs_rag_pipeline/numpy_bert.py"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    if not added:
        return None
    parent = subprocess.run(["git", "rev-parse", f"{added[-1]}^"], cwd=ROOT, capture_output=True, text=True)
    return parent.stdout.strip() or None


def export(ref: str, dest: Path) -> Path | None:
    try:
        data = subprocess.run(["git", "archive", "--format=tar", ref, "docs_rag_pipeline"], cwd=ROOT,
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def index(work: Path) -> Path:
    from docs_rag_pipeline.context import get_context
    from docs_rag_pipeline.refresh import refresh

    for rel, text in PAGES.items():
        (work / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / "docs" / rel).write_text(text)
    cfg = work / "docs_rag.yaml"
    cfg.write_text(textwrap.dedent(f"""\
        storage: {work / 'data'}
        sources:
          - {{name: guide, kind: local, path: docs, base_url: https://docs.example.org/}}
        """))
    refresh(get_context(cfg), "guide")
    return cfg


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return took


def import_profile(code: Path, env: dict[str, str], cwd: Path, args: list[str]) -> str:
    """The biggest top-level imports of one cold run (cumulative seconds)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "docs_rag_pipeline", *args],
                         env={**env, "PYTHONPATH": str(code)}, cwd=cwd, capture_output=True, text=True)
    top: dict[str, float] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cum, name = line.split("|", 2)
        if not cum.strip().isdigit() or name.startswith("  "):
            continue
        pkg = name.strip().split(".")[0]
        top[pkg] = top.get(pkg, 0.0) + int(cum) / 1e6
    best = sorted(top.items(), key=lambda kv: -kv[1])[:5]
    return ", ".join(f"{k} {v:.2f}s" for k, v in best)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", default=None, help="git ref of the baseline code (default: before numpy_bert)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="docs-rag-cold-") as tmp:
        work = Path(tmp)
        cfg = index(work)
        env = {**os.environ, "DOCS_RAG_CONFIG": str(cfg), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        search = [sys.executable, "-m", "docs_rag_pipeline", "search", QUERY, "--top-k", "3"]
        ref = a.baseline or baseline_ref()
        base = export(ref, work / "baseline") if ref else None
        commands = {
            "python -c pass (floor)": ([sys.executable, "-c", "pass"], ROOT),
            "import docs_rag_pipeline": ([sys.executable, "-c", "import docs_rag_pipeline"], ROOT),
            "docs-rag search (this code)": (search, ROOT),
        }
        if base is not None:
            commands[f"docs-rag search (baseline {ref[:12]})"] = (search, base)
        times: dict[str, list[float]] = {k: [] for k in commands}
        for name, (cmd, code) in commands.items():  # one warm-up each: the OS file cache, not the process
            timed(cmd, {**env, "PYTHONPATH": str(code)}, work)
        for _ in range(a.runs):  # interleaved, so load on the machine hits every command alike
            for name, (cmd, code) in commands.items():
                times[name].append(timed(cmd, {**env, "PYTHONPATH": str(code)}, work))
        print(f"cold `docs-rag search` on a 4-page guide, {a.runs} fresh processes per command (interleaved)\n")
        print(f"{'command':<42} {'median s':>9} {'min s':>7}")
        for name, ts in times.items():
            print(f"{name:<42} {statistics.median(ts):>9.2f} {min(ts):>7.2f}")
        ours = statistics.median(times["docs-rag search (this code)"])
        floor = statistics.median(times["import docs_rag_pipeline"])
        print(f"\nimports of one cold search (cumulative, -X importtime): "
              f"{import_profile(ROOT, env, work, search[3:])}")
        if base is not None:
            theirs = statistics.median(times[f"docs-rag search (baseline {ref[:12]})"])
            print(f"baseline imports: {import_profile(base, env, work, search[3:])}")
            print(f"\nratio cold search / baseline: {ours / theirs:.2f}x ({theirs:.2f} s → {ours:.2f} s)")
        print(f"cold search beyond `import docs_rag_pipeline`: {ours - floor:.2f} s "
              "(lancedb, config, model weights, the query)")
        print(f"goal ≤ 3 s: {'met' if ours <= 3.0 else 'NOT met'} ({ours:.2f} s median)")


if __name__ == "__main__":
    main()
