from __future__ import annotations

import os
from pathlib import Path

import pytest

from docs_rag_pipeline.config import ConfigError, load_config

from .conftest import write_config


def _cfg(tmp_path, body: str):
    (tmp_path / "docs").mkdir(exist_ok=True)
    p = tmp_path / "docs_rag.yaml"
    p.write_text(body)
    return p


@pytest.mark.parametrize("body, needle", [
    ("llm:\n  provider: openai\n  model: m\n  base_url: 'bob:LlmPw-0a8f@localhost:8080/v1'\n",
     "llm.base_url: 'localhost:8080/v1' is not an http(s) URL"),
    ("embedding:\n  provider: openai\n  model: m\n  base_url: 'ftp://bob:LlmPw-0a8f@localhost/v1'\n",
     "embedding.base_url: 'ftp://localhost/v1' is not an http(s) URL"),
    ("api:\n  dagster_graphql_url: 'ops:LlmPw-0a8f@127.0.0.1:3000/graphql'\n",
     "api.dagster_graphql_url: '127.0.0.1:3000/graphql' is not an http(s) URL"),
    ("api:\n  public_url: 'https://u:LlmPw-0a8f@docs.example.org/rag?x=1'\n",
     "api.public_url: 'https://docs.example.org/rag?x=1' has a query"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['u:LlmPw-0a8f@intranet/docs/']}\n",
     "sources[0].seed_urls[0]: 'intranet/docs/' is not an http(s) URL"),
])
def test_a_config_error_about_a_url_shows_no_password(tmp_path, body, needle):
    """A config error about a URL printed it whole, with the password written into it (`bob:pw@localhost:8080/v1`,
    a server URL without its scheme, the very mistake the error is for): on every command, in the server log
    and in Dagster's UI, where the code location fails to load with it (secrets F6)."""
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text(body)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert needle in str(err.value) and "LlmPw" not in str(err.value), str(err.value)


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
    # Dagster job, schedule and asset-check names allow no '-', so 'a-b' and 'a_b' would both be refresh_a_b
    ("sources:\n  - {name: a-b, kind: local, path: docs}\n  - {name: a_b, kind: local, path: docs}\n",
     "sources[1].name: 'a_b' clashes with source 'a-b' (sources[0])"),
    ("sources:\n  - {name: \"a\\n\", kind: local, path: docs}\n", "sources[0].name: 'a\\n' is not a valid source name"),
    ("sources:\n  - {name: a, kind: local, path: 5}\n", "sources[0].path: expected a folder path (a string), got int 5"),
    ("sources:\n  - {name: a, kind: local, path: docs, cron: '99 99 * * *'}\n",
     "sources[0].cron: '99 99 * * *' is not a valid cron expression"),
    ("sources:\n  - {name: a, kind: local, path: docs, cron: '*/0 * * * *'}\n", "a step of 0?"),
    ("sources:\n  - {name: a, kind: local, path: docs, cron: '0 0 31 2 *'}\n",
     "sources[0].cron: '0 0 31 2 *' never fires (no such date"),
    ("sources:\n  - {name: a, kind: ftp, path: docs}\n", "sources[0].kind: unknown kind 'ftp'"),
    ("sources:\n  - {name: 'Has Spaces', kind: local, path: docs}\n", "sources[0].name: 'Has Spaces' is not a valid"),
    ("sources:\n  - {name: a, kind: local, path: docs, colour: red}\n", "sources[0].colour: unknown key"),
    ("sources:\n  - {name: a, kind: local, path: docs, cron: daily}\n", "sources[0].cron: 'daily' is not a 5-field"),
    ("sources:\n  - {name: a, kind: local, path: docs, url_template: 'https://x.org/'}\n", "url_template: must contain {path}"),
    ("llm:\n  provider: openai\n", "llm.model: required"),
    ("sources: {name: a}\n", "sources: expected a list"),
    ("storage: [1, 2]\n", "storage: expected a string"),
    ("sources:\n  - {name: w, kind: web}\n", "sources[0].seed_urls: missing"),
    ("sources:\n  - {name: w, kind: web, seed_urls: [ftp://x]}\n", "sources[0].seed_urls[0]: 'ftp://x' is not an http(s) URL"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], allow_patterns: ['(']}\n",
     "sources[0].allow_patterns[0]: '(' is not a valid regular expression"),
    # configfuzz F8: YAML 1.1 reads 1e3 as text and 012 as the int 10: the message says what was written and the fix
    ("llm:\n  timeout_seconds: 1e3\n", "llm.timeout_seconds: expected a number, got str '1e3' (YAML 1.1 reads 1e3 as "
                                       "text, not a number); write 1000 or 1.0e+3"),
    ("embedding:\n  batch_size: 1e2\n", "embedding.batch_size: expected an integer, got str '1e2' (YAML 1.1 reads 1e2 "
                                        "as text, not a number); write 100"),
    ("sources:\n  - {name: 012, kind: local, path: docs}\n",
     "sources[0].name: expected a string, got int 10 (YAML reads 012 as a number); quote it: '012'"),
    # configfuzz F6: every page was fetched, then skipped at parse
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], content_selector: 'main >'}\n",
     "sources[0].content_selector: 'main >' is not a valid CSS selector (Invalid character ' ' position 4); write a CSS"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], content_selector: ''}\n",
     "sources[0].content_selector: '' is not a valid CSS selector"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], max_pages: -1}\n", "sources[0].max_pages: must be ≥ 1, got -1"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], path: docs}\n",
     "sources[0].path: unknown key for a web source"),
    ("sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], sitemaps: sometimes}\n",
     "sources[0].sitemaps: use 'auto', 'off'"),
    ("sources:\n  - {name: g, kind: git}\n", "sources[0].repo: missing"),
    ("storage: \"data\\nmore\"\nsources: []\n", "storage: 'data\\nmore' holds the control character '\\n'"),
    # git would read it as an option: --upload-pack=<command> runs the command
    ("sources:\n  - {name: g, kind: git, repo: '--upload-pack=touch /tmp/x;://'}\n",
     "sources[0].repo: '--upload-pack=touch /tmp/x;://' starts with '-', which git reads as an option"),
    ("sources:\n  - {name: g, kind: git, repo: x, url_rules: [{match: a}]}\n", "sources[0].url_rules[0]: a URL rule"),
    ("sources:\n  - {name: g, kind: git, repo: x, url_rules: [{match: '^a/(.*)', url: 'https://x.org/\\2'}]}\n",
     "sources[0].url_rules[0].url: \\2 names no group of match '^a/(.*)' (it has 1 group(s))"),
    ("sources:\n  - {name: g, kind: git, repo: x, url_rules: [{match: '^(?P<p>.*)', url: 'https://x.org/\\g<q>'}]}\n",
     "url_rules[0].url: \\g<q> names no group of match '^(?P<p>.*)' (it has 1 group(s) named p)"),
    ("sources:\n  - {name: g, kind: git, repo: x, metadata_rules: [{values: {'**/a/**': a}}]}\n",
     "sources[0].metadata_rules[0].key: missing"),
    ("api:\n  colour: red\n", "api.colour: unknown key"),
    ("api:\n  rate_limit_per_minute: lots\n", "api.rate_limit_per_minute: expected an integer"),
    ("api:\n  token_env: 42\n", "api.token_env: expected a string"),
    ("api:\n  max_top_k: 0\n", "api.max_top_k: must be ≥ 1"),
    ("api:\n  dagster_graphql_url: localhost:3000\n", "api.dagster_graphql_url: 'localhost:3000' is not an http(s) URL"),
    ("api:\n  public_url: docs.example.org\n", "api.public_url: 'docs.example.org' is not an http(s) URL"),
    # an LLM or embedding server's URL without its scheme: the HTTP client could send no request, and every
    # answer blamed an unreachable server (llmpath F8)
    ("llm:\n  provider: openai\n  model: m\n  base_url: 127.0.0.1:8000/v1\n",
     "llm.base_url: '127.0.0.1:8000/v1' is not an http(s) URL, e.g. 'http://localhost:8080/v1'"),
    ("llm:\n  provider: openai\n  model: m\n  base_url: 'ftp://127.0.0.1/v1'\n", "llm.base_url: 'ftp://127.0.0.1/v1' is not an http(s) URL"),
    ("embedding:\n  provider: openai\n  base_url: localhost:8080/v1\n",
     "embedding.base_url: 'localhost:8080/v1' is not an http(s) URL, e.g. 'http://localhost:8080/v1'"),
    ("api:\n  public_url: 'https://docs.example.org/rag?x=1'\n", "api.public_url: 'https://docs.example.org/rag?x=1' has a query"),
    ("api:\n  public_url: 'https://docs.example.org/#top'\n", "api.public_url: 'https://docs.example.org/#top' has a query or fragment"),
    ("api: [1]\n", "api: expected a mapping"),
    ("- just\n- a list\n", "(top level): expected a mapping"),
    ("key: [unclosed\n", "not valid YAML"),
    ('storage: "data\\udc80"\n', "not valid YAML: the string holds \\udc80, an escape for half of a UTF-16"),
    ("storage: s3:///team/docs\n", "'s3:///team/docs' names no bucket; write s3://BUCKET/PREFIX"),
    ("storage: s3://bkt/a/../escape\n", "a path part of the prefix is empty, '.' or '..'"),
    ("storage: s3://bkt/a//b\n", "a path part of the prefix is empty, '.' or '..'"),
    # a stray space (a template, a quoting slip) made LanceDB write the index to a local folder ./s3:/ bkt/…
    ("storage: 's3:// bkt/team'\n", "storage: 's3:// bkt/team': the bucket ' bkt' is not a valid bucket name (3 to 63 "
                                    "lowercase letters, digits, '.' and '-'"),
    ("storage: 's3://bkt /team'\n", "the bucket 'bkt ' is not a valid bucket name"),
    ("storage: s3://My_Bucket/team\n", "the bucket 'My_Bucket' is not a valid bucket name"),
    ("storage: 's3://bkt/te am'\n", "the prefix 'te am' holds ' '; write the prefix plainly"),
    ("storage: ' s3://bkt/team'\n", "' s3://' is not a URI scheme; write s3://BUCKET/PREFIX without spaces"),
    ("storage:\n  path: 's3:// bkt/team'\n", "storage: 's3:// bkt/team': the bucket ' bkt' is not a valid"),
])
def test_bad_config_names_the_key(tmp_path, body, needle):
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert needle in str(e.value)


WEB = "sources:\n  - {name: w, kind: web, seed_urls: ['https://x.org/'], %s}\n"


@pytest.mark.parametrize("body, needle", [
    (WEB % "timeout_seconds: 0", "sources[0].timeout_seconds: must be > 0, got 0"),
    # far larger values overflowed at run time: every fetch, search or ingest failed (configfuzz F3, F7, F9-F11)
    (WEB % "timeout_seconds: 10000000000", "sources[0].timeout_seconds: must be ≤ 86400, got 10000000000"),
    (WEB % "timeout_seconds: .inf", "sources[0].timeout_seconds: must be a finite number, got inf"),
    (WEB % "max_bytes: 100000000000000000000", "sources[0].max_bytes: must be ≤ 1000000000, got 100000000000000000000"),
    ("retrieval:\n  candidates: 4294967296\n", "retrieval.candidates: must be ≤ 40000, got 4294967296"),
    ("retrieval:\n  top_k: 20000\n", "retrieval.top_k: must be ≤ 10000, got 20000"),
    ("api:\n  max_top_k: 20000\n", "api.max_top_k: must be ≤ 10000, got 20000"),
    ("eval:\n  top_k: 20000\n", "eval.top_k: must be ≤ 10000, got 20000"),
    ("storage:\n  path: data\n  keep_versions_days: 100000000000\n",
     "storage.keep_versions_days: must be ≤ 36500, got 100000000000"),
    ("storage:\n  path: data\n  keep_versions_days: .inf\n", "storage.keep_versions_days: must be a finite number, got inf"),
    # .inf passed every lower bound: a crawl's delay was an OverflowError in time.sleep, a price made the
    # cost figure Infinity (not JSON); nprobes and rerank.top_n had no upper bound
    (WEB % "delay_seconds: .inf", "sources[0].delay_seconds: must be a finite number, got inf"),
    (WEB % "delay_seconds: 100000", "sources[0].delay_seconds: must be ≤ 86400, got 100000"),
    ("llm:\n  price_per_1k_prompt_tokens: .inf\n", "llm.price_per_1k_prompt_tokens: must be a finite number, got inf"),
    ("retrieval:\n  confident_similarity: .nan\n", "retrieval.confident_similarity: must be a finite number, got nan"),
    ("retrieval:\n  nprobes: 4294967296\n", "retrieval.nprobes: must be ≤ 100000, got 4294967296"),
    ("retrieval:\n  rerank:\n    url: http://127.0.0.1:9/rerank\n    top_n: 4294967296\n",
     "retrieval.rerank.top_n: must be ≤ 1000, got 4294967296"),
    (WEB % "delay_seconds: -0.5", "sources[0].delay_seconds: must be ≥ 0, got -0.5"),
    (WEB % "max_bytes: 0", "sources[0].max_bytes: must be ≥ 1, got 0"),
    (WEB % "max_retries: -1", "sources[0].max_retries: must be ≥ 0, got -1"),
    (WEB % "error_threshold: 1.5", "sources[0].error_threshold: must be ≤ 1, got 1.5"),
    (WEB % "respect_robots: 1", "sources[0].respect_robots: expected true or false, got int 1"),
    ("embedding:\n  timeout_seconds: 0\n", "embedding.timeout_seconds: must be > 0, got 0"),
    ("embedding:\n  batch_size: 0\n", "embedding.batch_size: must be ≥ 1, got 0"),
    ("embedding:\n  dimensions: 0\n", "embedding.dimensions: must be ≥ 1, got 0"),
    ("llm:\n  timeout_seconds: 0\n", "llm.timeout_seconds: must be > 0, got 0"),
    ("llm:\n  min_support: 1.5\n", "llm.min_support: must be ≤ 1, got 1.5"),
    ("llm:\n  temperature: -1\n", "llm.temperature: must be ≥ 0, got -1"),
    ("llm:\n  max_tokens: 0\n", "llm.max_tokens: must be ≥ 1, got 0"),
    ("llm:\n  uncited: maybe\n", "llm.uncited: unknown value 'maybe'; use 'refuse' or 'drop'"),
    ("retrieval:\n  top_k: 0\n", "retrieval.top_k: must be ≥ 1, got 0"),
    ("retrieval:\n  candidates: 0\n", "retrieval.candidates: must be ≥ 1, got 0"),
    ("retrieval:\n  min_similarity: 2\n", "retrieval.min_similarity: must be ≤ 1, got 2"),
    ("retrieval:\n  min_term_coverage: -0.1\n", "retrieval.min_term_coverage: must be ≥ 0, got -0.1"),
    ("eval:\n  min_recall_at_5: 1.2\n", "eval.min_recall_at_5: must be ≤ 1, got 1.2"),
    ("eval:\n  top_k: 0\n", "eval.top_k: must be ≥ 1, got 0"),
    ("api:\n  rate_limit_per_minute: -1\n", "api.rate_limit_per_minute: must be ≥ 0, got -1"),
    ("api:\n  max_question_chars: 0\n", "api.max_question_chars: must be ≥ 1, got 0"),
    ("chunking:\n  target_tokens: 10\n", "chunking.target_tokens: must be ≥ 32, got 10"),
    ("chunking:\n  overlap_tokens: -1\n", "chunking.overlap_tokens: must be ≥ 0, got -1"),
])
def test_numbers_out_of_range_name_the_key(tmp_path, body, needle):
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert needle in str(e.value)


@pytest.mark.parametrize("body, needle", [
    ('storage: "da\\0ta"\n', "storage: the value contains a NUL character"),
    ('storage: {path: "da\\0ta"}\n', "storage.path: the value contains a NUL character"),
    ('sources:\n  - {name: g, kind: local, path: "docs\\0x"}\n', "sources[0].path: the value contains a NUL"),
    ('sources:\n  - {name: g, kind: local, path: docs, include: ["*.md\\0"]}\n', "sources[0].include: the value"),
    ('sources:\n  - {name: g, kind: local, path: docs, metadata: {"a\\0": b}}\n', "sources[0].metadata: the value"),
    ('api: {token_env: "X\\0"}\n', "api.token_env: the value contains a NUL character (\\0); remove it"),
])
def test_a_nul_character_in_a_value_names_the_key(tmp_path, body, needle):
    """A NUL in a path or name (a YAML "\\0" escape) passed validation and failed later with
    Python's bare "embedded null byte", naming no key; it is a config error at the key now."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert needle in str(e.value)


@pytest.mark.parametrize("agent, needle", [
    ("docs-bot/1.0 (\u2603 team)", "'docs-bot/1.0 (\u2603 team)' holds '\u2603' (U+2603) at position 14, which an HTTP "
                                   "header cannot carry; use ASCII letters, digits, spaces and punctuation"),
    ("docs-bot\\r\\nX-Evil: 1", "holds the control character '\\r' at position 8, which an HTTP header cannot carry"),
    ("docs-bot\\x85", "holds the control character '\\x85' at position 8"),
    (" docs-bot/1.0", "starts or ends with a space or tab, which an HTTP header cannot carry"),
])
def test_a_user_agent_an_http_header_cannot_carry_is_refused(tmp_path, agent, needle):
    """A user_agent the HTTP client cannot send (☃ is not Latin-1, a line break would end the header) passed
    validation, then every fetch failed with "unexpected UnicodeEncodeError reading robots.txt" and the crawl
    ended "no page could be fetched (check seed_urls and that the site is up)"."""
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, WEB % f'user_agent: "{agent}"'))
    assert "docs_rag.yaml: sources[0].user_agent: " in str(e.value) and needle in str(e.value), str(e.value)
    assert load_config(_cfg(tmp_path, WEB % 'user_agent: "B\u00fccherbot/1.0 (docs team)"'))  # Latin-1 is sent as is


KEYED = [
    "embedding:\n  provider: openai\n  model: m\n  api_key_env: DOCS_RAG_TEST_KEY\n",
    "llm:\n  provider: openai\n  model: m\n  api_key_env: DOCS_RAG_TEST_KEY\n",
    "retrieval:\n  rerank:\n    url: http://127.0.0.1:9/rerank\n    api_key_env: DOCS_RAG_TEST_KEY\n",
]


@pytest.mark.parametrize("body", KEYED)
@pytest.mark.parametrize("key, problem", [
    ("sk-\u2603xyz", "holds '\u2603' (U+2603) at position 3, which an HTTP header cannot carry"),
    ("sk-xyz\n", "holds the control character '\\n' at position 6, which an HTTP header cannot carry"),
    (os.fsdecode(b"sk-\xffxyz"), "holds the byte 0xff at position 3, which is not UTF-8 text"),
    ("sk-xyz ", "starts or ends with a space or tab, which an HTTP header cannot carry"),
])
def test_an_api_key_an_http_header_cannot_carry_is_refused_naming_its_variable(tmp_path, monkeypatch, body, key,
                                                                               problem):
    """An embedding, LLM or rerank key the HTTP client cannot send as a bearer token (httpx writes ASCII)
    failed every request with "its answer could not be read (UnicodeEncodeError …); check embedding.base_url
    and embedding.model". Refused at load, naming api_key_env and the variable; the key is not shown."""
    monkeypatch.setenv("DOCS_RAG_TEST_KEY", key)
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    section = body.split(":")[0] + (".rerank" if body.startswith("retrieval") else "")
    assert f"docs_rag.yaml: {section}.api_key_env: the environment variable DOCS_RAG_TEST_KEY {problem}; set it to " \
           "the API key exactly as issued" in str(e.value), str(e.value)
    assert "xyz" not in str(e.value)
    monkeypatch.setenv("DOCS_RAG_TEST_KEY", "sk-xyz")
    assert load_config(_cfg(tmp_path, body))
    monkeypatch.delenv("DOCS_RAG_TEST_KEY")  # unset: said when a client needs the key, as before
    assert load_config(_cfg(tmp_path, body))


def test_values_in_range_load(tmp_path):
    cfg = load_config(_cfg(tmp_path, WEB % "timeout_seconds: 0.5, max_depth: 0, delay_seconds: 0, error_threshold: 1"
                                 + "llm:\n  min_support: 0\n  temperature: 0\napi:\n  rate_limit_per_minute: 0\n"))
    src = cfg.source("w")
    assert (src.timeout_seconds, src.max_depth, src.delay_seconds, src.error_threshold) == (0.5, 0, 0.0, 1.0)
    assert cfg.llm.min_support == 0.0 and cfg.api.rate_limit_per_minute == 0
    assert isinstance(src.seed_urls, tuple) and src.seed_urls == ("https://x.org/",)


def test_sitemaps_off_unquoted_means_off(tmp_path):
    """``sitemaps: off`` as the docs write it is the boolean false to YAML 1.1: it was refused with
    ``unknown value False; use 'auto' or 'off'``. A bare off (no, false) means ``off``, on (yes, true) ``auto``."""
    for word, want in (("off", "off"), ("no", "off"), ("false", "off"), ("on", "auto"), ("yes", "auto"),
                       ('"off"', "off"), ("auto", "auto")):
        assert load_config(_cfg(tmp_path, WEB % f"sitemaps: {word}")).source("w").sitemaps == want


def test_api_section(tmp_path):
    cfg = load_config(_cfg(tmp_path, "api:\n  token_env: DOCS_TOKEN\n  max_top_k: 4\n"))
    assert cfg.api.token_env == "DOCS_TOKEN" and cfg.api.max_top_k == 4
    assert cfg.api.admin_token_env is None and cfg.api.rate_limit_per_minute == 60
    plain = load_config(_cfg(tmp_path, "storage: data\n")).api
    assert plain.dagster_graphql_url == "http://127.0.0.1:3000/graphql" and plain.public_url is None
    # public_url: a trailing slash is dropped, a path prefix kept
    assert load_config(_cfg(tmp_path, "api:\n  public_url: https://docs.example.org/rag/\n")).api.public_url \
        == "https://docs.example.org/rag"


def test_every_cron_the_config_accepts_makes_a_schedule_or_a_config_error(tmp_path):
    """A cron once passed the config (any five words) and then ended every Dagster command in a
    DagsterInvalidDefinitionError traceback. Now the config checks it with croniter, and what
    croniter reads but Dagster does not is a ConfigError naming the key when the schedules are made."""
    from docs_rag_pipeline.defs.automation import schedules_for

    crons = ["0 4 * * *", "*/15 * * * mon-fri", "5,10 */2 1-15 jan *", "0 4 * * 7", "0 4 L * *", "0 0 29 2 *",
             "0 4 15W * *", "0 4 * * 1#2", "*/60 * * * *", "0 4 ? * *", "99 99 * * *", "60 * * * *", "0 24 * * *",
             "0 0 0 * *", "0 0 * 13 *", "1-70 * * * *", "0 4 * * 8", "H 4 * * *", "0 0 31 2 *", "0 4 * * * *"]
    accepted = 0
    for cron in crons:
        try:
            cfg = load_config(_cfg(tmp_path, f"sources:\n  - {{name: a, kind: local, path: docs, cron: '{cron}'}}\n"))
        except ConfigError as exc:
            assert f"sources[0].cron: '{cron}'" in str(exc)
            continue
        accepted += 1
        try:
            assert schedules_for(cfg)[0].cron_schedule == cron
        except ConfigError as exc:
            assert f"sources[0].cron: '{cron}' is not a cron expression Dagster schedules accept" in str(exc)
    assert accepted >= 9


def test_a_missing_local_folder_fails_its_refresh_not_the_config(tmp_path):
    """A local source whose folder is gone once made every command fail at config load (ask and
    search of the other sources too). Now the config loads, the other source answers, and the
    missing folder's refresh stops with an error naming the key; what it indexed before stays."""
    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.query import search
    from docs_rag_pipeline.sources.base import SourceError

    from .conftest import GUIDE, write_docs

    write_docs(tmp_path / "docs", GUIDE)
    write_docs(tmp_path / "other", {"index.md": "# Other\n\nThe quillmaster tool polishes feathers.\n"})
    body = ("storage: data\nsources:\n  - {name: guide, kind: local, path: docs}\n"
            "  - {name: other, kind: local, path: other}\n")
    (tmp_path / "docs_rag.yaml").write_text(body)
    cfg = tmp_path / "docs_rag.yaml"
    for name in ("guide", "other"):
        refresh.refresh(Context(load_config(cfg)), name)
    before = sorted(r["chunk_id"] for r in Context(load_config(cfg)).chunks.rows("source = 'guide'"))
    (tmp_path / "docs").rename(tmp_path / "moved")
    assert search("quillmaster feathers", config=cfg, top_k=1)[0].source == "other"
    with pytest.raises(SourceError, match=r"sources.guide.path: '.*/docs' does not exist; create it or fix the path"):
        refresh.refresh(Context(load_config(cfg)), "guide")
    assert sorted(r["chunk_id"] for r in Context(load_config(cfg)).chunks.rows("source = 'guide'")) == before


def test_a_source_that_turns_up_empty_removes_nothing(tmp_path):
    """An unmounted volume or an emptied checkout looks like a folder with no documents; its
    refresh once deleted every page of the source. Now a scan that finds no page while pages are
    indexed stops with an error that says so and how to drop the source on purpose; the index
    keeps every row, and a refresh after the files are back changes nothing."""
    import shutil

    from docs_rag_pipeline import refresh
    from docs_rag_pipeline.context import Context
    from docs_rag_pipeline.sources.base import SourceError

    from .conftest import GUIDE, write_docs

    write_docs(tmp_path / "docs", GUIDE)
    (tmp_path / "docs_rag.yaml").write_text("storage: data\nsources:\n  - {name: guide, kind: local, path: docs}\n")
    cfg = tmp_path / "docs_rag.yaml"
    refresh.refresh(Context(load_config(cfg)), "guide")
    before = sorted(r["chunk_id"] for r in Context(load_config(cfg)).chunks.rows("source = 'guide'"))
    shutil.move(tmp_path / "docs", tmp_path / "away")
    (tmp_path / "docs").mkdir()  # the mount point is there, the volume is not
    with pytest.raises(SourceError, match=r"sources.guide: the scan found no page, but \d+ are indexed; "
                                          r"nothing was removed.*remove the source from the config"):
        refresh.refresh(Context(load_config(cfg)), "guide")
    assert sorted(r["chunk_id"] for r in Context(load_config(cfg)).chunks.rows("source = 'guide'")) == before
    (tmp_path / "docs").rmdir()
    shutil.move(tmp_path / "away", tmp_path / "docs")
    stats = refresh.refresh(Context(load_config(cfg)), "guide")
    assert stats.pages_new == stats.pages_changed == stats.pages_deleted == 0 and stats.pages_unchanged > 0


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")


def test_env_var_selects_config(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    p = write_config(tmp_path)
    monkeypatch.setenv("DOCS_RAG_CONFIG", str(p))
    assert load_config().path == p.resolve()


@pytest.mark.parametrize("body", ["sources: []\n", "storage:\nsources: []\n"])
def test_default_storage_is_beside_the_config_file(tmp_path, body, monkeypatch):
    cfg = tmp_path / "docs_rag.yaml"
    cfg.write_text(body)
    monkeypatch.chdir("/")  # not the config's folder: a bare 'data' would land in the working directory
    assert load_config(cfg).storage == str(tmp_path / "data")


def test_a_config_not_utf8_or_with_an_alias_bomb_is_a_config_error(tmp_path):
    """A config saved as Latin-1 once surfaced as "'utf-8' codec can't decode byte 0xe9 in position
    10" (no file named, no fix); YAML aliases that expand to millions of values or contain themselves
    are refused as they are in frontmatter."""
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("sources: []\nstorage: café-data\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"latin\.yaml: not UTF-8 text \(byte 0xe9 on line 2\); save the file as UTF-8$"):
        load_config(latin)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)))
    with pytest.raises(ConfigError, match=r"bomb\.yaml: not valid YAML: its aliases expand it to more than 100,000 values"):
        load_config(bomb)


def latin1_folder(parent: Path) -> Path:
    """A folder named ``dätä`` in Latin-1 (a name that is not UTF-8) under ``parent``, holding a config
    with ``storage: data``."""
    folder = Path(os.fsdecode(os.fsencode(parent) + b"/d\xe4t\xe4"))
    folder.mkdir()
    (folder / "docs_rag.yaml").write_text("storage: data\nsources: []\n")
    return folder


def test_a_storage_path_that_is_not_utf8_is_refused_naming_storage(tmp_path):
    """LanceDB takes its path as UTF-8 text: a storage folder whose path is not UTF-8 (the config in a
    Latin-1 folder, relative storage) failed every command with a bare "'utf-8' codec can't encode character
    '\\udce4'" (serve: 500). Refused at load, naming the key and the fix, the byte shown as \\xe4."""
    folder = latin1_folder(tmp_path)
    with pytest.raises(ConfigError) as e:
        load_config(folder / "docs_rag.yaml")
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path}/d\\xe4t\\xe4/docs_rag.yaml: storage: '{tmp_path}/d\\xe4t\\xe4/data' is not "
                          "UTF-8 (the byte 0xe4 in a folder name) and LanceDB needs a UTF-8 path: give that folder a "
                          "UTF-8 name, or point storage at a folder whose path is UTF-8"), msg
    assert "\udce4" not in msg
    assert sorted(os.listdir(folder)) == ["docs_rag.yaml"]  # nothing created
    (folder / "docs_rag.yaml").write_text(f"storage: {tmp_path / 'data'}\nsources: []\n")  # the fix it names
    assert load_config(folder / "docs_rag.yaml").storage == str(tmp_path / "data")


def test_every_source_key_is_known_to_shape_pages_or_not():
    """A change of a key that shapes a source's pages (max_bytes, asciidoc_attributes, metadata…)
    re-parses the source on the next refresh; the keys were listed by hand, so a new key of
    SourceConfig could be forgotten and its change never reach the index. Each key is now in one of
    the two lists, with the reason it needs no re-parse."""
    from docs_rag_pipeline.config import SOURCE_KEYS, SourceConfig
    from docs_rag_pipeline.refresh import NOT_SHAPING_KEYS, SHAPING_KEYS

    keys = set(SourceConfig.model_fields)
    assert set(SHAPING_KEYS) | set(NOT_SHAPING_KEYS) == keys, sorted(keys ^ (set(SHAPING_KEYS) | set(NOT_SHAPING_KEYS)))
    assert not set(SHAPING_KEYS) & set(NOT_SHAPING_KEYS)
    assert keys == set().union(*SOURCE_KEYS.values())


def test_a_source_name_over_64_characters_is_refused_with_the_limit(tmp_path):
    """A 65-character name of lowercase letters follows the advice "use lowercase letters, digits, '-'
    and '_'" already: the message must name the length and the limit of 64."""
    (tmp_path / "docs").mkdir()
    name = "a" * 65
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"sources:\n  - {{name: {name}, kind: local, path: docs}}\n")
    with pytest.raises(ConfigError) as e:
        load_config(cfg)
    assert f"sources[0].name: '{name}' is not a valid source name (65 characters); use at most 64 lowercase " \
           "letters, digits, '-' and '_'" in str(e.value)
    cfg.write_text(f"sources:\n  - {{name: {name[:64]}, kind: local, path: docs}}\n")
    assert load_config(cfg).sources[0].name == name[:64]


@pytest.mark.parametrize("body, key", [
    ("api:\n  token_env: ''\n", "api.token_env"),
    ("api:\n  token_env: '  '\n", "api.token_env"),
    ("api:\n  admin_token_env: ''\n", "api.admin_token_env"),
    ("embedding:\n  api_key_env: ''\n", "embedding.api_key_env"),
    ("llm:\n  api_key_env: ''\n", "llm.api_key_env"),
    ("retrieval:\n  rerank: {url: 'http://127.0.0.1:9/rerank', api_key_env: ''}\n", "retrieval.rerank.api_key_env"),
    ("sources:\n  - {name: g, kind: git, repo: 'https://x.org/r.git', token_env: ''}\n", "sources[0].token_env"),
])
def test_an_empty_env_variable_name_is_a_config_error_naming_the_key(tmp_path, body, key):
    """configfuzz F2: `api.token_env: ""` (a template value that came out empty) read as "no variable",
    which turned authentication off; an empty name is not null."""
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert f"{key}: " in str(e.value) and "is not the name of an environment variable" in str(e.value)


def test_an_api_without_token_env_still_loads(tmp_path):
    assert load_config(_cfg(tmp_path, "api:\n  token_env: null\n")).api.token_env is None
    assert load_config(_cfg(tmp_path, "api:\n  token_env: DOCS_RAG_API_TOKEN\n")).api.token_env == "DOCS_RAG_API_TOKEN"


@pytest.mark.parametrize("body, needle", [
    ("storage: data\nsources:\n  - {name: docs, kind: local, path: docs}\napi:\n  max_top_k: 8\n"
     "sources:\n  - {name: handbook, kind: local, path: docs}\n", "sources: the key is given twice (lines 2 and 6); keep one"),
    ("sources:\n  - name: docs\n    kind: local\n    path: docs\n    path: handbook\n",
     "sources[0].path: the key is given twice (lines 4 and 5); keep one"),
    ("storage: /srv/index\nstorage: data\n", "storage: the key is given twice (lines 1 and 2); keep one"),
    ("api: {token_env: A, token_env: B}\n", "api.token_env: the key is given twice (both on line 1); keep one"),
])
def test_a_key_given_twice_is_a_config_error_naming_it_and_both_lines(tmp_path, body, needle):
    """configfuzz F1: PyYAML keeps the last of duplicate keys, so a second `sources:` block (a paste or
    a merge) silently dropped the first block's sources from the config and from search."""
    with pytest.raises(ConfigError) as e:
        load_config(_cfg(tmp_path, body))
    assert str(e.value).endswith(needle), str(e.value)
    assert "docs_rag.yaml: " in str(e.value)


def test_a_yaml_merge_key_is_not_a_duplicate(tmp_path):
    body = "sources:\n  - &s {name: a, kind: local, path: docs}\n  - <<: *s\n    name: b\n"
    cfg = load_config(_cfg(tmp_path, body))
    assert [s.name for s in cfg.sources] == ["a", "b"]
