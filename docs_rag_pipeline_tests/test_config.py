from __future__ import annotations

import pytest

from docs_rag_pipeline.config import ConfigError, load_config

from .conftest import write_config


def _cfg(tmp_path, body: str):
    (tmp_path / "docs").mkdir(exist_ok=True)
    p = tmp_path / "docs_rag.yaml"
    p.write_text(body)
    return p


def test_valid_config_defaults(guide):
    cfg = load_config(guide)
    assert cfg.embedding.provider == "local" and cfg.llm.provider == "none"
    assert cfg.chunking.target_tokens is None and cfg.chunking.overlap_tokens == 32
    src = cfg.source("guide")
    assert src.kind == "local" and src.path.is_dir() and src.cron == "0 4 * * *"


@pytest.mark.parametrize("body, needle", [
    ("storage: data\nembedings: {}\n", "embedings: unknown key"),
    ("chunking:\n  target_tokens: lots\n", "chunking.target_tokens: expected an integer"),
    ("chunking:\n  overlap_tokens: 64\n  target_tokens: 48\n", "chunking.overlap_tokens: must be smaller"),
    ("embedding:\n  provider: magic\n", "embedding.provider: unknown provider 'magic'"),
    ("sources:\n  - {name: a, kind: local, path: docs}\n  - {name: a, kind: local, path: docs}\n",
     "sources[1].name: duplicate source name 'a'"),
    ("sources:\n  - {name: a, kind: local, path: nowhere}\n", "sources[0].path: folder"),
    ("sources:\n  - {name: a, kind: ftp, path: docs}\n", "sources[0].kind: unknown kind 'ftp'"),
    ("sources:\n  - {name: 'Has Spaces', kind: local, path: docs}\n", "sources[0].name: 'Has Spaces' is not a valid"),
    ("sources:\n  - {name: a, kind: local, path: docs, colour: red}\n", "sources[0].colour: unknown key"),
    ("sources:\n  - {name: a, kind: local, path: docs, cron: daily}\n", "sources[0].cron: 'daily' is not a 5-field"),
    ("sources:\n  - {name: a, kind: local, path: docs, url_template: 'https://x.org/'}\n", "url_template: must contain {path}"),
    ("llm:\n  provider: openai\n", "llm.model: required"),
    ("sources: {name: a}\n", "sources: expected a list"),
    ("storage: [1, 2]\n", "storage: expected a string"),
    ("- just\n- a list\n", "(top level): expected a mapping"),
    ("key: [unclosed\n", "not valid YAML"),
])
def test_bad_config_names_the_key(tmp_path, body, needle):
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert needle in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_env_var_selects_config(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    p = write_config(tmp_path)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(p))
    assert load_config().path == p.resolve()
