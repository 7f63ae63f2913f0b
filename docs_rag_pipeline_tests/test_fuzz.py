"""Property-based fuzzing of every route of ``/openapi.json`` (schemathesis + hypothesis), over real
HTTP against a real waitress server and a real index: no input gives a 5xx.

Bounded and deterministic: ``derandomize=True`` (hypothesis seeds from the test), no example
database, a fixed number of examples per route and mode; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from docs_rag_pipeline.serve.api import create_app

from .dagster_helpers import index_guide
from .test_api import serve, variant

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis import GenerationMode  # noqa: E402

EXAMPLES = 25  # per route and mode: 6 routes × 2 modes × 25 = 300 requests


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    cfg = index_guide(tmp_path_factory.mktemp("fuzz"))
    with serve(create_app(config_path=str(variant(cfg, "fuzz.yaml", "rate_limit_per_minute: 0")))) as url:
        yield url


@pytest.fixture(scope="module")
def schema(server):  # noqa: ANN001, ANN201
    return schemathesis.openapi.from_url(f"{server}/openapi.json")


def operations(server: str) -> list[str]:
    spec = requests.get(f"{server}/openapi.json", timeout=30).json()
    return [f"{m.upper()} {p}" for p, ops in spec["paths"].items() for m in ops]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_no_route_gives_a_5xx(server, schema, mode, tmp_path: Path):
    ops = [r.ok() for r in schema.get_all_operations()]
    assert sorted(f"{op.method.upper()} {op.path}" for op in ops) == sorted(operations(server))
    seen: dict[str, set[int]] = {}
    expected = set(operations(server))
    if mode is GenerationMode.NEGATIVE:  # GET /health and the agent card take no input: nothing to get wrong
        expected.discard("GET /health")
        expected.discard("GET /.well-known/agent.json")
    for op in ops:
        label = f"{op.method.upper()} {op.path}"
        if label not in expected:
            continue

        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        def run(case) -> None:  # noqa: ANN001
            resp = case.call(base_url=server, timeout=60)
            seen.setdefault(label, set()).add(resp.status_code)
            assert resp.status_code < 500, f"{label} → {resp.status_code}: {resp.text[:500]}\n{case.as_curl_command()}"
            ctype = {k.lower(): v for k, v in resp.headers.items()}.get("content-type") or [""]
            ctype = ctype[0] if isinstance(ctype, list) else ctype
            if isinstance(case.body, dict) and case.body.get("stream") is True and resp.status_code == 200:
                # "stream": true answers with server-sent events, ending with the final event
                assert ctype.startswith("text/event-stream"), label
                assert "event: error" not in resp.text and resp.text.rstrip().split("\n")[-2] == "event: final"
                return
            want = "text/html" if (label == "GET /view" and resp.status_code == 200) else "application/json"
            assert ctype.startswith(want), label
            if resp.status_code >= 400:
                err = resp.json()["error"]
                assert err["code"] and err["message"] and str(tmp_path.anchor + "tmp") not in resp.text

        run()
    assert set(seen) == expected
    if mode is GenerationMode.NEGATIVE:  # invalid requests were made, and refused with a 4xx
        assert {400, 413} & seen["POST /search"] and {400, 413} & seen["POST /ask"]
    if mode is GenerationMode.POSITIVE:  # valid requests are answered, not only refused
        assert 200 in seen["POST /search"] and 200 in seen["POST /ask"] and 200 in seen["GET /health"]
