"""Dagster's compute-log helpers, kept out of the terminal's Ctrl-C.

For every step, Dagster's compute-log capture (``dagster._core.execution.compute_logs.execute_posix_tail``)
starts ``tail -F`` and a ``watch_orphans.py`` babysitter in the process that runs the step, in its
process group. A terminal's Ctrl-C is SIGINT to the whole foreground process group, so it reached them
too, and each babysitter (a Python process) printed a ``KeyboardInterrupt`` traceback above the one-line
``stopped by a signal …`` of ``docs-rag ingest``. They are started in a process group of their own
instead: Dagster still ends them when the step ends, and the babysitter still ends ``tail`` when the
step's process dies (it watches its parent, not the signal).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import types


def keep_ctrl_c_from_compute_log_helpers() -> None:
    """Make ``compute_logs``' helpers start in a process group of their own (POSIX; once per process)."""
    if sys.platform == "win32":
        return
    try:  # a private module of Dagster's: another Dagster that moved it only loses this nicety
        from dagster._core.execution import compute_logs
    except ImportError:
        return
    if not isinstance(getattr(compute_logs, "subprocess", None), types.ModuleType) \
            or getattr(compute_logs.subprocess, "own_process_group", False):
        return
    shim = types.ModuleType("subprocess")
    shim.__dict__.update(subprocess.__dict__)
    shim.Popen = functools.partial(subprocess.Popen, process_group=0)
    shim.own_process_group = True
    compute_logs.subprocess = shim
