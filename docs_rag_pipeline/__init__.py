"""docs_rag_pipeline: documentation → cited answers.

``from docs_rag_pipeline import search, ask`` is the query path; it never imports Dagster.
The Dagster definitions live in :mod:`docs_rag_pipeline.defs`.

The names are loaded on first use (PEP 562), so ``docs-rag`` starts its error handling before the
heavy imports: a Ctrl-C while they run is the one-line stop, not a traceback out of an import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .query import ask, search
    from .records import Answer, Citation, Hit

__all__ = ["Answer", "Citation", "Hit", "ask", "search"]
__version__ = "0.1.0"

_HOMES = {"ask": "query", "search": "query", "Answer": "records", "Citation": "records", "Hit": "records"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
