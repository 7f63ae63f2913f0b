"""A BERT sentence encoder in plain numpy, for short batches (queries, answer sentences).

Loading sentence-transformers means importing torch and transformers: seconds of a cold
``docs-rag search`` spent before the first query. This module computes the same vectors as
sentence-transformers for a BERT model with mean pooling and normalisation (all-MiniLM-L6-v2 and its
kind) from the model's ``model.safetensors`` with numpy only; the differences are float32 rounding
(cosine similarity to the torch vectors above 0.99999, checked in tests/test_embedding.py).
Bulk embedding during a refresh still goes through sentence-transformers (see ``LocalEmbedder``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np


def supports(model_dir: Path) -> bool:
    """Whether ``model_dir`` is a sentence-transformers model this encoder computes exactly:
    a BERT (absolute positions, GELU) with mean pooling and normalisation, weights in safetensors."""
    try:
        cfg = json.loads((model_dir / "config.json").read_text())
        modules = [m.get("type", "") for m in json.loads((model_dir / "modules.json").read_text())]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        pooling.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                 "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                                 "pooling_mode_lasttoken"))
    return (cfg.get("model_type") == "bert" and cfg.get("hidden_act") == "gelu"
            and cfg.get("position_embedding_type", "absolute") == "absolute"
            and modules == ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                            "sentence_transformers.models.Normalize"]
            and bool(mean_only) and (model_dir / "model.safetensors").is_file()
            and (model_dir / "tokenizer.json").is_file())


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26): float32 precision, no scipy."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class NumpyBert:
    """Mean-pooled, normalised BERT sentence vectors, like sentence-transformers computes them."""

    def __init__(self, model_dir: Path, *, max_tokens: int, batch_size: int = 16) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        cfg = json.loads((model_dir / "config.json").read_text())
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.dimensions = int(cfg["hidden_size"])
        self.batch_size = batch_size
        w = load_file(str(model_dir / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v for k, v in w.items()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        encs = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))  # batches of like lengths: little padding
        out = np.zeros((len(encs), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start:start + self.batch_size]
            n = max(len(encs[i].ids) for i in part)
            ids = np.zeros((len(part), n), dtype=np.int64)
            mask = np.zeros((len(part), n), dtype=np.float32)
            for row, i in enumerate(part):
                ids[row, :len(encs[i].ids)] = encs[i].ids
                mask[row, :len(encs[i].ids)] = 1.0
            h = self._encode(ids, mask)
            pooled = (h * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
            out[part] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out

    def _encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, eps = self.w, self.eps
        b, n = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        d = self.dimensions // self.heads
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]  # padding gets no attention

        def dense(t: np.ndarray, name: str) -> np.ndarray:  # as one 2-D product: a stacked one skips BLAS
            out = t.reshape(b * n, t.shape[-1]) @ w[f"{name}.weight"].T + w[f"{name}.bias"]
            return out.reshape(b, n, -1)

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, n, self.heads, d).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q, k, v = (split(dense(x, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            ctx = (scores / scores.sum(-1, keepdims=True)) @ v
            ctx = ctx.transpose(0, 2, 1, 3).reshape(b, n, self.dimensions)
            x = _layer_norm(x + dense(ctx, f"{p}.attention.output.dense"),
                            w[f"{p}.attention.output.LayerNorm.weight"], w[f"{p}.attention.output.LayerNorm.bias"], eps)
            inter = dense(x, f"{p}.intermediate.dense")
            inter = 0.5 * inter * (1.0 + _erf(inter / np.float32(np.sqrt(2.0))))
            x = _layer_norm(x + dense(inter, f"{p}.output.dense"),
                            w[f"{p}.output.LayerNorm.weight"], w[f"{p}.output.LayerNorm.bias"], eps)
        return x
