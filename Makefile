# Two commands do everything on a fresh machine with Python 3.11 and make:
#   make demo   -- create .venv, install, run the default scenario on built-in data
#   make test   -- create .venv, install with test extras, run the test suite and the type checker
#   make docs   -- build the API reference and user guide into out/docs (warnings are errors)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO_OUT ?= out/demo

.PHONY: demo test docs bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/mprr run local_anonymization --out $(DEMO_OUT)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest
	$(BIN)/python -m mypy

# API reference (docstrings, numpy style) and user guide (README, docs/*.md) -> out/docs/index.html;
# Sphinx warnings are errors
docs: $(VENV)/.installed-test
	rm -rf docs/sphinx/_autosummary docs/sphinx/_generated
	$(BIN)/python -m sphinx -b html -q -E -W --keep-going docs/sphinx out/docs
	@echo "docs: out/docs/index.html"

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/estimation.py
	$(BIN)/python benchmarks/protocols.py
	$(BIN)/python benchmarks/actors.py
	$(BIN)/python benchmarks/secure_sum.py
	$(BIN)/python benchmarks/privacy.py
	$(BIN)/python benchmarks/runtimes.py
	$(BIN)/python benchmarks/masked_floor.py --runs 1
	$(BIN)/python benchmarks/masked_phases.py
	$(BIN)/python benchmarks/send_order.py --runs 2
	$(BIN)/python benchmarks/masked_scale.py --runs 1
	$(BIN)/python benchmarks/streams.py
	$(BIN)/python benchmarks/clusters_sampled.py
	$(BIN)/python benchmarks/wire_codec.py
	$(BIN)/python benchmarks/vector_state.py
	$(BIN)/python benchmarks/oracles.py
	$(BIN)/python benchmarks/multidim.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache docs/sphinx/_autosummary docs/sphinx/_generated
