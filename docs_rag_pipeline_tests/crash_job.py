"""A Dagster job whose one step's process is killed as the out-of-memory killer kills one (SIGKILL), for
the test of what `docs-rag ingest --parallel` says then; step processes rebuild it from this module."""

from __future__ import annotations

import os
import signal

from dagster import job, multiprocess_executor, op


@op
def killed_step() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


@job(executor_def=multiprocess_executor)
def crash_job() -> None:
    killed_step()
