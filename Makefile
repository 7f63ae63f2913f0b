# The two commands: `make demo` (install, ingest the default source through Dagster, ask) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LANCEDB_LOG := error
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install demo test ui serve bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(BIN)/docs-rag ingest
	$(BIN)/docs-rag ask "How does an incremental refresh avoid re-embedding unchanged pages?"

test: install
	$(BIN)/python -m pytest -q

ui: install
	$(BIN)/docs-rag ui

serve: install
	$(BIN)/docs-rag serve

bench: install
	$(BIN)/python bench/run_all.py

clean:
	rm -rf data/lancedb data/dagster_io data/dagster_home data/cache
