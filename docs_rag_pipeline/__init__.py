"""docs_rag_pipeline: documentation → cited answers.

``from docs_rag_pipeline import search, ask`` is the query path; it never imports Dagster.
The Dagster definitions live in :mod:`docs_rag_pipeline.defs`.
"""

from .query import ask, search
from .records import Answer, Citation, Hit

__all__ = ["Answer", "Citation", "Hit", "ask", "search"]
__version__ = "0.1.0"
