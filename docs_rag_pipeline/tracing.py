"""LangSmith tracing when configured (LANGSMITH_TRACING + LANGSMITH_API_KEY), a no-op otherwise.

``traceable`` wraps a function as a LangSmith run; ``current_trace_id`` gives the id of the trace
being recorded, so every answer carries a ``trace_id`` either way.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def enabled() -> bool:
    return os.environ.get("LANGSMITH_TRACING", "").lower() in ("1", "true", "yes") and bool(
        os.environ.get("LANGSMITH_API_KEY"))


def traceable(name: str, run_type: str = "chain") -> Callable[[F], F]:
    """``langsmith.traceable`` when tracing is on; the plain function otherwise (nothing sent)."""

    def wrap(fn: F) -> F:
        import functools

        traced = None

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            nonlocal traced
            if not enabled():
                return fn(*args, **kwargs)
            if traced is None:
                from langsmith import traceable as ls_traceable

                traced = ls_traceable(name=name, run_type=run_type, process_inputs=_public_inputs)(fn)
            return traced(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def _public_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """What a run records as inputs: the question and options, not the process context."""
    return {k: v for k, v in inputs.items() if k != "ctx"}


def current_trace_id() -> str:
    """The LangSmith trace id of the current run, or a fresh id when not tracing."""
    if enabled():
        try:
            from langsmith.run_helpers import get_current_run_tree

            run = get_current_run_tree()
            if run is not None:
                return str(run.trace_id)
        except Exception:  # noqa: BLE001 - tracing must never break an answer
            pass
    return uuid.uuid4().hex


def flush() -> None:
    """Send pending runs now (tests and short-lived processes)."""
    if enabled():
        try:
            from langsmith.run_trees import get_cached_client

            get_cached_client().flush()
        except Exception:  # noqa: BLE001
            pass
