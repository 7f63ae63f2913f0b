from __future__ import annotations

import re

import numpy as np
import pytest

from docs_rag_pipeline.config import EmbeddingConfig
from docs_rag_pipeline.embedding import EmbeddingError, FakeEmbedder, LocalEmbedder, OpenAIEmbedder, text_sha
from docs_rag_pipeline.store import EmbeddingCache, connect

from .fake_openai import EmbeddingsServer


@pytest.fixture(scope="module")
def local():
    return LocalEmbedder()


def test_local_model_is_offline_and_semantic(local):
    assert local.name == "sentence-transformers/all-MiniLM-L6-v2" and local.max_tokens == 256
    v = local.embed(["How do I install the package?", "Installation instructions for the library",
                     "The weather in Paris is sunny"])
    assert v.shape == (3, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.2
    # token counts come from the model's own word-piece tokenizer
    assert local.count_tokens("unbelievably") > 1 and local.count_tokens("") == 0


def test_numpy_encoder_matches_sentence_transformers(local):
    """Short batches skip torch (numpy_bert); their vectors are sentence-transformers' to float32 rounding,
    so query vectors and the torch-embedded chunk vectors live in one space."""
    texts = ["How do I fix the ZX81_QUANTUM_FLUX import error?", "données, façade, 日本語 🎉", "a",
             "binding " * 600,  # longer than the window: truncated the same way
             "Binding connects a form field to a property of a Python object, so that edits update it."]
    assert local._numpy_ok and len(texts) <= local.numpy_max_texts
    fast = local.embed(texts)
    reference = local._model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert fast.shape == reference.shape == (5, 384) and fast.dtype == np.float32
    assert np.abs(fast - reference).max() < 1e-5
    assert np.abs(local.embed([texts[0]])[0] - fast[0]).max() < 1e-6  # batching and padding change nothing


def test_fake_embedder_is_deterministic():
    f = FakeEmbedder()
    assert np.array_equal(f.embed(["a b c"]), f.embed(["a b c"]))
    assert f.embed(["x"]).shape == (1, 64)


def test_openai_provider_against_a_local_server(local, monkeypatch):
    monkeypatch.setenv("TEST_EMB_KEY", "sk-test")
    with EmbeddingsServer(local.embed, fail_first=1) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="text-embedding-3-small", base_url=srv.url,
                                             api_key_env="TEST_EMB_KEY", batch_size=2, max_retries=2))
        assert emb.dimensions == 384 and emb.name == "openai:text-embedding-3-small"
        out = emb.embed(["alpha", "beta", "gamma"])
        assert out.shape == (3, 384)
        assert np.allclose(out, local.embed(["alpha", "beta", "gamma"]), atol=1e-5)
        assert srv.requests[0]["auth"] == "Bearer sk-test"  # the first request failed with 503 and was retried
        assert [len(r["body"]["input"]) for r in srv.requests[-2:]] == [2, 1]  # batched


def test_embedding_dimensions_is_asked_of_the_server(local, monkeypatch):
    """``embedding.dimensions`` was only a declaration: it was never sent, so `dimensions: 256` with
    text-embedding-3-small got 1536-number vectors and every ingest failed on their size. It is sent
    as the API's ``dimensions`` now; from a server that refuses it, vectors are asked again without it."""
    monkeypatch.setenv("TEST_EMB_KEY", "sk-test")
    with EmbeddingsServer(local.embed) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="text-embedding-3-small", base_url=srv.url,
                                             api_key_env="TEST_EMB_KEY", dimensions=128, max_retries=0))
        out = emb.embed(["alpha", "beta"])
        assert out.shape == (2, 128) and emb.dimensions == 128
        assert {r["body"].get("dimensions") for r in srv.requests} == {128}
        unset = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="text-embedding-3-small", base_url=srv.url,
                                               api_key_env="TEST_EMB_KEY", max_retries=0))
        assert unset.dimensions == 384 and "dimensions" not in srv.requests[-1]["body"]
        # a model that cannot shorten its vectors (ada-002) refuses the parameter: asked again without it,
        # embedding.dimensions says the size its vectors have, as before it was sent
        srv.fixed_size = True
        declared = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=0,
                                                  api_key_env="TEST_EMB_KEY", dimensions=384))
        assert declared.embed(["alpha", "beta"]).shape == (2, 384)
        assert [r["body"].get("dimensions") for r in srv.requests[-2:]] == [384, None]
        assert declared.embed(["gamma"]).shape == (1, 384) and "dimensions" not in srv.requests[-1]["body"]


def test_openai_provider_reports_a_dead_server(monkeypatch):
    with pytest.raises(EmbeddingError, match="failed after 1 attempts"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url="http://127.0.0.1:9/v1",
                                       max_retries=0, dimensions=None))


def test_openai_provider_cuts_off_a_server_that_trickles_its_answer(local):
    """``timeout_seconds`` bounds the whole request, not each read: a server that sends 64 bytes every
    0.05 s (a 384-d vector is about 8 KB: 6 s) was waited for; with timeout_seconds 1 it fails, as one
    that sends nothing does."""
    with EmbeddingsServer(local.embed, drip=0.05) as srv:
        with pytest.raises(EmbeddingError, match="failed after 1 attempts: Request timed out"):
            OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=0,
                                           timeout_seconds=1))


def test_missing_api_key(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    with pytest.raises(EmbeddingError, match="NO_SUCH_KEY is not set"):
        OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", api_key_env="NO_SUCH_KEY"))


def test_embedding_cache_roundtrip(tmp_path):
    cache = EmbeddingCache(connect(str(tmp_path)))
    assert cache.get_many("m", [text_sha("a")]) == {}
    v = np.arange(4, dtype=np.float32)
    assert cache.put_many("m", {text_sha("a"): v}) == 1
    cache.put_many("m", {text_sha("a"): v})  # a second put of the same text is harmless
    got = cache.get_many("m", [text_sha("a"), text_sha("b")])
    assert list(got) == [text_sha("a")] and np.array_equal(got[text_sha("a")], v)
    assert cache.get_many("other-model", [text_sha("a")]) == {}


@pytest.mark.parametrize("mangle, says", [
    (lambda texts, a: {**a, "data": [{**d, "index": 0} for d in a["data"]]}, "numbered its 2 vectors [0, 0], not 0 to 1"),
    (lambda texts, a: {**a, "data": [{**d, "embedding": d["embedding"][:-1] if d["index"] else d["embedding"]}
                                     for d in a["data"]]}, "returned vectors of lengths [383, 384]"),
    (lambda texts, a: {**a, "data": None}, "its answer could not be read"),
])
def test_an_answer_whose_vectors_cannot_be_placed_is_an_error_naming_the_server(local, mangle, says):
    """Duplicate indexes (whose vector is whose text?), vectors of two lengths, no data: an
    EmbeddingError naming the server, never vectors stored against the wrong text or a bare numpy
    ValueError."""
    with EmbeddingsServer(local.embed) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=0))
        srv.mangle = mangle
        with pytest.raises(EmbeddingError, match=re.escape(says)) as e:
            emb.embed(["alpha", "beta"])
    assert srv.url.rstrip("/") in str(e.value)


def test_nan_or_zero_vectors_never_reach_the_cache_and_a_poisoned_cache_heals(local, tmp_path, monkeypatch):
    """A server returning NaN for one text: the vectors went into the embedding cache, the index write
    failed ("Vector column has NaNs"), and every later ingest took them from the cache and failed again,
    with the server long fixed. All-zero vectors were stored silently (never found by meaning). Now
    such a vector fails the embed step naming the text, nothing of its batch is cached, the next ingest
    with a good server succeeds, and a cache poisoned by an older version is embedded again."""
    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.query import search

    from .conftest import GUIDE, write_config, write_docs

    def spoil(value: float):  # noqa: ANN202
        def mangle(texts, answer):  # noqa: ANN001, ANN202
            for t, d in zip(texts, answer["data"]):
                if "ZX81_QUANTUM_FLUX" in t:
                    d["embedding"] = [value] * len(d["embedding"])
            return answer
        return mangle

    write_docs(tmp_path / "docs", GUIDE)
    with EmbeddingsServer(local.embed) as srv:
        def config(model: str):  # noqa: ANN202
            return Context(load_config(write_config(tmp_path, extra=f"""
                embedding:
                  provider: openai
                  model: {model}
                  base_url: {srv.url}
            """)))

        ctx = config("emb-a")
        for value, says in ((float("nan"), "holds NaN or infinite values"), (0.0, "is all zeros")):
            srv.mangle = spoil(value)
            with pytest.raises(EmbeddingError, match=f"openai:emb-a returned a vector that {says} for the text"):
                refresh.refresh(ctx, "guide")
        table = ctx.cache._open()  # none at all when the bad vector came in the first batch
        vectors = table.to_arrow().column("vector").to_pylist() if table is not None else []
        assert all(np.isfinite(v).all() and any(v) for v in vectors)
        srv.mangle = None
        assert refresh.refresh(ctx, "guide").pages_new == 5
        assert "ZX81_QUANTUM_FLUX" in search("ZX81_QUANTUM_FLUX import error", config=str(ctx.config.path))[0].text

        # a cache an older version poisoned: NaN vectors for every text of another model's space
        other = config("emb-b")
        shas = sorted(set(ctx.cache._open().to_arrow().column("sha").to_pylist()))
        other.cache.put_many(other.embedder.space, {s: np.full(other.embedder.dimensions, np.nan, np.float32)
                                                    for s in shas})
        lines: list[str] = []
        out = refresh.refresh(other, "guide", log=lines.append)
    assert out.pages_new == 5 and out.chunks_embedded == len(shas)
    assert any("cached vectors are unusable (NaN, infinite, all zeros or of another dimension)" in ln for ln in lines)


def _html_page(texts, headers):  # noqa: ANN001, ANN202 - a proxy's error page, a login page, a wrong path
    return 200, {"Content-Type": "text/html; charset=utf-8"}, b"<html><body>Bad gateway</body></html>"


def test_an_html_page_a_non_number_or_two_sizes_in_one_embed_is_an_error_naming_the_server():
    """embedapi F2, F3, F4: a 200 with an HTML page failed with `AttributeError: 'str' object has no
    attribute 'data'`, a string inside an embedding with `could not convert string to float: 'x'`,
    and answers of two sizes within one embed with numpy's `inhomogeneous shape`: none named the
    server. Now each is an EmbeddingError naming the server, the model and what is wrong."""
    fake = FakeEmbedder(dimensions=64)
    with EmbeddingsServer(fake.embed) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=0,
                                             batch_size=2))
        srv.reply = _html_page
        with pytest.raises(EmbeddingError, match=re.escape(
                "its answer could not be read (ValueError: a text/html answer, not JSON: "
                "'<html><body>Bad gateway</body></html>'); check embedding.base_url")) as e:
            emb.embed(["alpha"])
        assert srv.url.rstrip("/") in str(e.value)
        srv.reply = None
        srv.mangle = lambda texts, a: {**a, "data": [{**d, "embedding": ["x", *d["embedding"][1:]]} for d in a["data"]]}
        with pytest.raises(EmbeddingError, match=re.escape(
                f"the embedding server at {srv.url}/ (model m): its answer could not be read (vector 0 holds 'x', "
                "not a number)")):
            emb.embed(["alpha"])
        answers = iter(range(100))
        srv.mangle = lambda texts, a: a if next(answers) % 2 == 0 else {
            **a, "data": [{**d, "embedding": d["embedding"][:32]} for d in a["data"]]}
        with pytest.raises(EmbeddingError, match=re.escape(
                "(model m) returned 64-dimension vectors for one request and 32-dimension ones for the next")):
            emb.embed(["alpha", "beta", "gamma"])


def test_a_429_waits_for_its_retry_after_up_to_a_bound(monkeypatch, caplog):
    """embedapi F7: a 429 with `Retry-After: 2` was retried after 0.5 s, refused again, and the ingest
    gave up though the server had said when to come back. Now the retry waits what Retry-After asks,
    at most MAX_RETRY_AFTER_SECONDS."""
    import logging
    import time

    from docs_rag_pipeline import embedding

    fake = FakeEmbedder(dimensions=64)
    opened: list[float] = []
    retry_after = {"value": "2"}

    def rate_limited(texts, headers):  # noqa: ANN001, ANN202 - refuses everything in its first 1.5 s
        opened.append(opened[0] if opened else time.monotonic())
        if time.monotonic() < opened[0] + 1.5:
            return 429, {"Content-Type": "application/json", "Retry-After": retry_after["value"]}, \
                b'{"error": {"message": "slow down"}}'
        return None

    caplog.set_level(logging.WARNING, logger="docs_rag_pipeline.embedding")
    with EmbeddingsServer(fake.embed, reply=rate_limited) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=1,
                                             dimensions=64))
        assert emb.embed(["alpha"]).shape == (1, 64)
        assert len(srv.requests) == 2 and "retrying in 2.0s" in caplog.text
        monkeypatch.setattr(embedding, "MAX_RETRY_AFTER_SECONDS", 0.1)
        opened.clear()
        retry_after["value"] = "3600"
        srv.reply = lambda texts, headers: (rate_limited(texts, headers) if len(opened) < 1 else None)
        assert emb.embed(["beta"]).shape == (1, 64)
    assert "retrying in 0.1s" in caplog.text


def test_no_message_shows_the_api_key_or_the_password_of_the_base_url(monkeypatch):
    """embedapi F8: `embedding.base_url: http://user:PASSWORD@host/v1` was printed whole in every error,
    and a server whose 401 echoed the key it got had the key printed. Now the URL is shown without its
    user and password, the key is masked, and the client's exception (which holds it) is not chained."""
    import json
    import traceback

    monkeypatch.setenv("TEST_EMB_KEY", "sk-SECRET123456")
    fake = FakeEmbedder(dimensions=64)
    with EmbeddingsServer(fake.embed) as srv:
        srv.reply = lambda texts, headers: (401, {"Content-Type": "application/json"}, json.dumps(
            {"error": {"message": f"Incorrect API key provided: {headers.get('Authorization')}"}}).encode())
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, max_retries=0,
                                             api_key_env="TEST_EMB_KEY", dimensions=64))
        with pytest.raises(EmbeddingError, match=re.escape("Incorrect API key provided: Bearer ***")) as e:
            emb.embed(["alpha"])
    assert "SECRET123456" not in "".join(traceback.format_exception(e.value))
    assert "check the key in the variable embedding.api_key_env names" in str(e.value)
    emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url="http://user:sk-PASSWORD99@127.0.0.1:9/v1",
                                         max_retries=0, dimensions=64))
    with pytest.raises(EmbeddingError, match=re.escape("embedding server at http://127.0.0.1:9/v1/ failed after 1 "
                                                       "attempts")) as e:
        emb.embed(["alpha"])
    assert "PASSWORD99" not in "".join(traceback.format_exception(e.value))


def test_a_base_url_password_the_server_repeats_as_sent_is_masked():
    """``user:password@`` in embedding.base_url goes on the wire as ``Authorization: Basic
    base64(user:password)``; a server that echoed the credential it refused put that base64 (the password,
    decoded by anyone) into the step's error, the Dagster event log and the CLI (secrets F1)."""
    import base64
    import json
    import traceback

    wire = base64.b64encode(b"user:sk-PASSWORD99").decode()
    fake = FakeEmbedder(dimensions=64)
    with EmbeddingsServer(fake.embed) as srv:
        srv.reply = lambda texts, headers: (401, {"Content-Type": "application/json"}, json.dumps(
            {"error": {"message": f"Incorrect API key provided: {headers.get('Authorization')}"}}).encode())
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", max_retries=0, dimensions=64,
                                             base_url=srv.url.replace("://", "://user:sk-PASSWORD99@", 1)))
        with pytest.raises(EmbeddingError, match=re.escape("Incorrect API key provided: Basic ***")) as e:
            emb.embed(["alpha"])
    shown = "".join(traceback.format_exception(e.value))
    assert wire not in shown and "PASSWORD99" not in shown, shown
    # the key was never sent: the hint names the user and password that were, not the key (secrets, left)
    assert "the user name and password in embedding.base_url went as HTTP Basic auth in place of the key" \
        in str(e.value) and "check the key in the variable" not in str(e.value), str(e.value)


def _spoiled(how: str):  # noqa: ANN202
    """A mangle that makes every vector NaN, all zeros, or 32 of its 64 numbers (a model swapped behind the name)."""
    def mangle(texts, answer):  # noqa: ANN001, ANN202
        for d in answer["data"]:
            d["embedding"] = {"nan": [float("nan")] * 64, "zeros": [0.0] * 64, "size": d["embedding"][:32]}[how]
        return answer
    return mangle


@pytest.mark.parametrize("how, says", [
    ("nan", "returned a query vector that holds NaN or infinite values: fix the embedding server"),
    ("zeros", "returned a query vector that is all zeros: fix the embedding server"),
    ("size", "returned a query vector that has 32 dimensions where 64 were expected; embedding.dimensions and the "
             "index are 64: the model behind embedding.model changed"),
])
def test_a_query_vector_that_cannot_be_searched_with_is_an_error_naming_the_server(openai_index, how, says):
    """embedapi F5, F6: a query vector of another size than the index's was LanceDB's `Invalid input,
    query dim(32) doesn't match …` (the CLI's exit 2 for bad input; HTTP 500), and a NaN or all-zero one
    was searched with: full-text hits only, `/ask` refusing a question the docs cover. Now the query
    vector gets the check an ingest makes: an EmbeddingError naming the server (HTTP 503)."""
    from docs_rag_pipeline.config import load_config
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.retrieval import search
    from docs_rag_pipeline.serve.api import create_app

    cfg, srv = openai_index
    ctx = Context(load_config(cfg))
    assert len(search(ctx, "forms validate input"))
    srv.mangle = _spoiled(how)
    with pytest.raises(EmbeddingError, match=re.escape(says)) as e:
        search(ctx, "forms validate input")
    assert f"embedding server at {srv.url}/ (model fake-64)" in str(e.value)
    client = create_app(config_path=str(cfg)).test_client()
    for path, body in (("/search", {"query": "forms"}), ("/ask", {"question": "How do forms validate input?"})):
        r = client.post(path, json=body)
        assert r.status_code == 503, r.get_data(as_text=True)
        assert r.get_json()["error"]["code"] == "backend_unavailable"
        assert "embedding server" in r.get_json()["error"]["message"]


def test_an_html_page_at_query_time_is_503_not_500(openai_index):
    """embedapi F2 over HTTP: an HTML page from the embedding server made `/search` and `/ask` a 500
    `internal_error` (an AttributeError); now it is a backend failure, 503 `backend_unavailable`."""
    from docs_rag_pipeline.serve.api import create_app

    cfg, srv = openai_index
    client = create_app(config_path=str(cfg)).test_client()
    assert client.post("/search", json={"query": "forms"}).status_code == 200
    srv.reply = _html_page
    for path, body in (("/search", {"query": "forms"}), ("/ask", {"question": "How do forms validate input?"})):
        r = client.post(path, json=body)
        assert r.status_code == 503 and r.get_json()["error"]["code"] == "backend_unavailable", r.get_data(as_text=True)


def test_an_openai_embedder_holds_one_batch_of_python_floats_at_a_time(monkeypatch):
    """The vectors of a call of many batches (``refresh.embed_rows`` asks for 64 batches a step) went
    into one list of Python floats, converted at the end: ~12 KB a text of 384 numbers, 200 MB for a
    step of 16,384 texts (batch_size 256). Each answer now goes into the float32 result as it comes:
    the call holds that result and one batch's lists, less than a pointer per number of the result;
    the vectors are the same."""
    import tracemalloc

    from docs_rag_pipeline.embedding import _normalise

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    texts = [f"text {i} about gateways and quotas" for i in range(4096)]
    with EmbeddingsServer(FakeEmbedder(dimensions=384).embed) as srv:
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", base_url=srv.url, batch_size=64,
                                             max_retries=0))
        tracemalloc.start()
        try:
            vectors = emb.embed(texts)
            _held, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert vectors.shape == (4096, 384) and vectors.dtype == np.float32
    assert peak < len(texts) * 384 * 8, f"{peak} bytes at the peak of embedding {len(texts)} texts"
    # as the whole call's vectors normalised at once gave them (the server's numbers, normalised again)
    assert np.array_equal(vectors, _normalise(FakeEmbedder(dimensions=384).embed(texts)))


def test_a_token_written_as_the_user_name_of_base_url_is_masked():
    """``https://<token>@host/v1`` (a token where a user name goes, with no password) sends the token as
    ``Authorization: Basic base64(token:)``; its base64 was masked, but a server that echoed the user name it
    refused put the token itself into the step's error, the event log and the CLI: only the git source
    masked a token written so. A user name with a password is no secret, and stays."""
    import json
    import traceback

    from docs_rag_pipeline.masking import Masked

    fake = FakeEmbedder(dimensions=64)
    with EmbeddingsServer(fake.embed) as srv:
        srv.reply = lambda texts, headers: (401, {"Content-Type": "application/json"}, json.dumps(
            {"error": {"message": "no such user hf_TOKEN12345 for this endpoint"}}).encode())
        emb = OpenAIEmbedder(EmbeddingConfig(provider="openai", model="m", max_retries=0, dimensions=64,
                                             base_url=srv.url.replace("://", "://hf_TOKEN12345@", 1)))
        with pytest.raises(EmbeddingError, match=re.escape("no such user *** for this endpoint")) as e:
            emb.embed(["alpha"])
    assert "TOKEN12345" not in "".join(traceback.format_exception(e.value))
    assert Masked(None, "https://alice:s3cret-pw@h/v1").mask("alice: s3cret-pw") == "alice: ***"
