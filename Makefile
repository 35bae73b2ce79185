# rtbench: `make run` sets up, builds and runs the quick suite on this
# machine; `make test` sets up if needed and runs the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUITE ?= quick

.PHONY: all setup agent agent-test run test lint pytest bench clean

all: agent

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rtbench needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

setup: $(STAMP)

agent: setup
	$(BIN)/rtbench build

agent-test: setup
	$(BIN)/rtbench build --flavor test

run: setup
	$(BIN)/rtbench run --suite $(SUITE)

lint: setup
	$(BIN)/ruff check host tests bench
	$(BIN)/mypy

pytest: setup agent agent-test
	$(BIN)/pytest -q

test: lint pytest

bench: setup agent
	$(BIN)/python bench/bench_foundation.py

clean:
	rm -rf build
