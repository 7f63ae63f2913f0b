"""``from docs_rag_pipeline import search, ask`` must not import Dagster, even after a query; nor torch:
the query and the answer's sentences are embedded by numpy_bert (a cold ``docs-rag search`` stays fast)."""

from __future__ import annotations

import json
import subprocess
import sys

from dagster import DagsterInstance

from .dagster_helpers import materialize_source

SCRIPT = """
import json, sys
from docs_rag_pipeline import search, ask
hits = search("two-way binding converters", config=sys.argv[1])
ans = ask("What does a converter do?", config=sys.argv[1])
heavy = ("dagster", "torch", "sentence_transformers", "transformers", "polars")
print(json.dumps({"heavy": sorted(m for m in sys.modules if m.split(".")[0] in heavy),
                  "hits": len(hits), "refused": ans.refused}))
"""


def test_query_path_does_not_import_dagster_or_torch(guide):
    with DagsterInstance.ephemeral() as instance:
        materialize_source(guide, "guide", instance)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(guide)], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["hits"] > 0 and res["refused"] is False
    assert res["heavy"] == []
