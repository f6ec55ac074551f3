# Two commands do everything on a fresh machine with Python 3.11 and make:
#   make demo   -- create .venv, install, run the default scenario on built-in data
#   make test   -- create .venv, install with test extras, run the test suite and the type checker
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO_OUT ?= out/demo

.PHONY: demo test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/mprr run local_anonymization --out $(DEMO_OUT)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest
	$(BIN)/python -m mypy

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/estimation.py
	$(BIN)/python benchmarks/protocols.py
	$(BIN)/python benchmarks/actors.py
	$(BIN)/python benchmarks/secure_sum.py
	$(BIN)/python benchmarks/privacy.py
	$(BIN)/python benchmarks/runtimes.py
	$(BIN)/python benchmarks/streams.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache
