"""Run every benchmark and write bench/RESULTS.md with the machine they ran on.

Run: ``make bench`` (or ``python bench/run_all.py [names...]``).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = {"ingest": "ingest.py", "query": "query.py", "serve": "serve.py", "cold_start": "cold_start.py",
           "hostile_answer": "hostile_answer.py", "hostile_markdown": "hostile_markdown.py",
           "html_tables": "html_tables.py", "long_words": "long_words.py",
           "write_memory": "write_memory.py", "frame_memory": "frame_memory.py", "first_ask": "first_ask.py", "reparse": "reparse.py"}  # ingest.py also runs refresh


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (f"{platform.node()}: {os.cpu_count()} cores ({cpu or platform.processor()}), {mem} RAM, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}")


def previous_sections(path: Path) -> dict[str, str]:
    """Sections of an earlier RESULTS.md, so running one benchmark keeps the others' results."""
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for chunk in path.read_text().split("\n## ")[1:]:
        name = chunk.split(" ", 1)[0].strip()
        out[name] = "\n## " + chunk.rstrip() + "\n"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description="Run benchmarks of bench/ and write their output to bench/RESULTS.md.")
    ap.add_argument("names", nargs="*", metavar="name", help=f"benchmarks to run (default: all): {', '.join(BENCHES)}")
    names = ap.parse_args().names or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:  # not choices=: Python 3.11's argparse rejects an empty nargs="*" list against choices
        ap.error(f"unknown benchmark {', '.join(unknown)}; valid names: {', '.join(BENCHES)}")
    results = HERE / "RESULTS.md"
    sections = previous_sections(results)
    # the machine line names where the sections without their own ran; a section written now names its own
    old = results.read_text().split("\nMachine: ", 1) if results.is_file() else []
    first_machine = old[1].split("\n", 1)[0] if len(old) == 2 else machine()
    parts = [f"# Benchmark results\n\nWritten by `make bench` (`python bench/run_all.py [names]`); each section "
             "says when it ran.\n\n"
             f"Machine: {first_machine}\n\nEach section is one script's output; ratios are measured in the same run "
             "against the baseline named in the script's docstring.\n"]
    for name in names:
        script = HERE / BENCHES[name]
        print(f"== {name}", flush=True)
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        text = out.stdout.strip() + (f"\n\n(exit {out.returncode})\n{out.stderr[-2000:]}" if out.returncode else "")
        print(text, flush=True)
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        here = "" if machine() == first_machine else f"Machine: {machine()}\n\n"
        sections[name] = f"\n## {name} ({when}, {time.perf_counter() - t0:.0f} s)\n\n{here}```\n{text}\n```\n"
    parts += [sections[n] for n in BENCHES if n in sections]
    results.write_text("".join(parts))
    print(f"wrote {HERE / 'RESULTS.md'}")


if __name__ == "__main__":
    main()
