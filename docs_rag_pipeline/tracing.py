"""LangSmith tracing when configured (LANGSMITH_TRACING + LANGSMITH_API_KEY), a no-op otherwise.

``traceable`` wraps a function as a LangSmith run; ``current_trace_id`` gives the id of the trace
being recorded, so every answer carries a ``trace_id`` either way.

LangSmith being slow or down must cost nothing noticeable: the one client (:func:`client`) has short
timeouts and no urllib3 retries, its sender threads do not hold the process open, and at exit what is
still queued gets at most :data:`FLUSH_AT_EXIT_SECONDS` (langsmith's defaults, a 60 s read timeout with
retries in threads the interpreter waits for, kept ``docs-rag ask`` from exiting for six minutes).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
import time
import uuid
from typing import Any, Callable, TypeVar

from . import http_deadline
from .masking import Masked

F = TypeVar("F", bound=Callable[..., Any])

#: connect and read timeouts of each LangSmith request, in milliseconds
TIMEOUT_MS = (2_000, 5_000)
#: the longest a process waits at exit for queued runs to reach LangSmith
FLUSH_AT_EXIT_SECONDS = 5.0


def enabled() -> bool:
    if os.environ.get("LANGSMITH_TRACING", "").lower() not in ("1", "true", "yes"):
        return False
    key = os.environ.get("LANGSMITH_API_KEY")
    return bool(key) and _key_problem(key) is None


@functools.lru_cache(maxsize=4)
def _key_problem(key: str) -> str | None:
    """Why ``key`` cannot be sent as LangSmith's ``x-api-key`` header (said once in the log, the key never
    shown), or None. langsmith strips the spaces around it; a character a header cannot carry (a pasted
    dash or quote) failed every upload with an encoding error whose text is the whole key, logged per answer."""
    from .config import header_value_problem

    problem = header_value_problem(key.strip(), "ascii")
    if problem:
        logging.getLogger(__name__).warning(
            "LangSmith tracing is off: the environment variable LANGSMITH_API_KEY %s; set it to the API key "
            "exactly as issued", problem)
    return problem


def traceable(name: str, run_type: str = "chain", *,
              reduce: Callable[[list[Any]], Any] | None = None) -> Callable[[F], F]:
    """``langsmith.traceable`` when tracing is on; the plain function otherwise (nothing sent).

    A generator function (a streamed answer, its streamed completion) is one run from its first item to
    its end, its steps children of it; ``reduce`` turns what it yielded (and returned, last) into the
    run's outputs. Closing the generator (a reader that went away) closes the function's own generator at
    once, as without tracing: langsmith's wrapper ends the run but leaves it to the garbage collector."""

    def wrap(fn: F) -> F:
        traced = None

        def traced_of(body: Callable[..., Any]) -> Any:
            from langsmith import traceable as ls_traceable

            return ls_traceable(name=name, run_type=run_type, process_inputs=_public_inputs, client=client(),
                                reduce_fn=reduce)(body)

        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*args: Any, **kwargs: Any) -> Any:
                if not enabled():
                    return (yield from fn(*args, **kwargs))
                opened: list[Any] = []

                @functools.wraps(fn)
                def body(*a: Any, **k: Any) -> Any:
                    g = fn(*a, **k)
                    opened.append(g)
                    return (yield from g)

                run = traced_of(body)(*args, **kwargs)
                try:
                    return (yield from run)
                finally:
                    run.close()
                    for g in opened:
                        g.close()

            return gen  # type: ignore[return-value]

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            nonlocal traced
            if not enabled():
                return fn(*args, **kwargs)
            if traced is None:
                traced = traced_of(fn)
            return traced(*args, **kwargs)

        return inner  # type: ignore[return-value]

    return wrap


def _public_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """What a run records as inputs: the question and options, not the process context nor an LLM client
    (which holds the API key)."""
    return {k: v for k, v in inputs.items() if k not in ("ctx", "client")}


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


@functools.cache
def client() -> Any:
    """The process's LangSmith client (see the module's docstring); call only when :func:`enabled`."""
    import atexit

    from langsmith import Client
    from urllib3.util import Retry

    os.environ.setdefault("LANGSMITH_USE_DAEMON", "true")  # read by Client(): its sender threads
    logging.getLogger("langsmith.client").addFilter(_Quiet())
    c = Client(timeout_ms=TIMEOUT_MS, retry_config=Retry(total=0))
    _mask_the_key_in_langsmith_logs()
    # on for langsmith too: its own check of LANGSMITH_TRACING takes only "true", so with "1" or "yes" (which
    # turn tracing on here) it recorded no run at all, and every trace id was a random one
    from langsmith import configure

    configure(enabled=True)
    atexit.register(flush, FLUSH_AT_EXIT_SECONDS)  # runs before langsmith's own handler (last in, first out)
    return c


def without_key(text: str) -> str:
    """``text`` with the LangSmith API key written ``***`` (an endpoint that refuses it may repeat it)."""
    return Masked(os.environ.get("LANGSMITH_API_KEY") or os.environ.get("LANGCHAIN_API_KEY"), "").mask(text)


class _MaskKey(logging.Filter):
    """Writes the LangSmith API key as ``***`` in a log record of langsmith's, its traceback included: an
    endpoint that refuses the key may repeat it (``401 {"detail": "Invalid token lsv2_…"}``), and langsmith
    logs the answer whole (``Failed to multipart ingest runs: …``), as the LLM and embedding keys are masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = without_key(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = without_key(record.exc_text)
        return True


_MASK_KEY = _MaskKey()


def _mask_the_key_in_langsmith_logs() -> None:
    """Puts :class:`_MaskKey` on every logger of langsmith's (a filter of the ``langsmith`` logger does not
    see its children's records), once their modules are imported, the sender thread's included."""
    import importlib

    for module in ("langsmith.client", "langsmith.run_helpers", "langsmith._internal._background_thread"):
        try:
            importlib.import_module(module)
        except ImportError:  # another langsmith's layout: its other loggers still get the filter
            pass
    for name in list(logging.root.manager.loggerDict):
        if name == "langsmith" or name.startswith("langsmith."):
            logger = logging.getLogger(name)
            if _MASK_KEY not in logger.filters:
                logger.addFilter(_MASK_KEY)


#: a LangSmith failure (down, answering 500, a bad endpoint) is logged once in this many seconds: langsmith
#: logs one per batch of runs, 2-4 per answer, each hundreds of characters (and a traceback per feedback)
QUIET_SECONDS = 60.0


class _Quiet(logging.Filter):
    """langsmith's warnings and errors, each kind (by its first words) once per :data:`QUIET_SECONDS`,
    without a traceback: an outage is said when it starts, not for every answer while it lasts."""

    def __init__(self) -> None:
        super().__init__()
        self.said: dict[str, float] = {}
        self.lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        text = record.getMessage()
        if text.startswith("Run compression is not enabled"):  # advice for the LangSmith server's admin, said
            return False  # by every process, and when LangSmith is down ("update to the latest version")
        kind, now = text[:40], time.monotonic()
        with self.lock:
            if now - self.said.get(kind, -QUIET_SECONDS) < QUIET_SECONDS:
                return False
            self.said[kind] = now
        record.msg, record.args = f"{text} (more like it in the next {QUIET_SECONDS:g} s are not logged)", ()
        record.exc_info = record.exc_text = None
        return True


def flush(timeout: float | None = FLUSH_AT_EXIT_SECONDS) -> None:
    """Send pending runs now, waiting at most ``timeout`` seconds (tests and short-lived processes)."""
    if enabled():
        try:
            client().flush(timeout=timeout)
        except Exception:  # noqa: BLE001
            pass


def within(seconds: float, fn: Callable[[], Any]) -> tuple[bool, Any]:
    """``(True, fn())`` when ``fn`` returns within ``seconds``, else ``(False, None)``: it is left to
    finish in a daemon thread (a LangSmith call must not hold a request, whatever its timeouts)."""
    return http_deadline.within(seconds, fn, name="docs-rag langsmith")
