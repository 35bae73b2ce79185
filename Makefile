# rtbench: `make run` sets up, builds and runs the quick suite on this
# machine; `make test` sets up if needed and runs the whole test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUITE ?= quick

.PHONY: all setup shell packages agent agent-test run test check lint pytest bench catalogue clean

all: agent

PIP := $(BIN)/pip --quiet --disable-pip-version-check

# One line per step; tools speak only when something is wrong.
$(STAMP): pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "rtbench needs Python 3.11 or newer")'
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || scripts/system-packages --need python3-venv
	@echo "setup: Python environment in $(VENV)/"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install --upgrade pip
	@echo "setup: installing rtbench and its development tools"
	@$(PIP) install -e '.[dev]'
	@touch $@

setup: $(STAMP)

# A shell with the venv's `rtbench` (and python, pytest) first on PATH.
shell: setup
	@echo "shell: rtbench from $(VENV)/bin on PATH; leave with exit"
	@VIRTUAL_ENV="$(CURDIR)/$(VENV)" PATH="$(CURDIR)/$(BIN):$$PATH" $${SHELL:-/bin/sh} -i

# rtbench build says on stderr what it builds while it builds, then prints
# the agent's path: the name goes on that last line (make test runs both
# builds beside lint, their lines interleaved).
agent: setup
	@agent=$$($(BIN)/rtbench build) && echo "agent: $$agent"

agent-test: setup
	@agent=$$($(BIN)/rtbench build --flavor test) && echo "agent (test build): $$agent"

# Exits 0 once the run completed and is stored, whatever the OS scored
# (docs/outcomes.md); `rtbench run` itself exits 0/1/2 for CI. The last line
# names the next step: the venv's rtbench is not on PATH (README).
run: setup
	@$(BIN)/rtbench run --suite $(SUITE) --exit-zero-if-stored
	@echo "run: next: $(BIN)/rtbench doctor, $(BIN)/rtbench runs, $(BIN)/rtbench --help (or make shell: rtbench on PATH)"

lint: setup
	@echo "lint: ruff, mypy"
	@$(BIN)/ruff check --quiet host tests bench
	@$(BIN)/mypy --no-error-summary

# Exit 5 (no test collected) is a failure too: a suite that ran nothing passed nothing.
# --durations: every log names the 25 slowest tests, where the time goes.
# -n auto: one worker per CPU this process may use (pytest-xdist), each
# file on one worker (its module fixtures set up once), the long files
# first; tests that measure time run alone (tests/exclusive.py).
# PYTEST_WORKERS=0 runs them one at a time, in this process.
PYTEST_WORKERS ?= auto
# Where PYTHONDONTWRITEBYTECODE is set (some CI images and containers) every
# Python process the tests start (`rtbench` commands, benches, helpers: 69
# places in tests/ start one) compiled rtbench's sources again, ~0.12 CPU s
# each: the tests' bytecode goes to build/pycache instead, leaving the
# source tree as clean as the variable asked.
PYTEST_ENV := $(if $(PYTHONDONTWRITEBYTECODE),env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(CURDIR)/build/pycache)
define PYTEST_RUN
	@echo "tests: pytest on $(PYTEST_WORKERS) workers (skips listed with their reason at the end)"
	@$(PYTEST_ENV) $(BIN)/pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder \
	  --durations=25; rc=$$?; \
	  [ $$rc -ne 5 ] || echo "tests: FAILED: pytest collected no tests" >&2; exit $$rc
endef
pytest: setup agent agent-test
	$(PYTEST_RUN)

# The system packages the tests need (scripts/system-packages.txt): as root
# with apt-get they are installed; otherwise the missing ones are named with
# the command that installs them, and their tests skip (fail in CI).
packages:
	@scripts/system-packages

# Lint and the agent's two builds side by side (14 s and 2 x 7 s, one after
# the other before); then the suite.
test: packages
	@$(MAKE) --no-print-directory -j3 lint agent agent-test
	$(PYTEST_RUN)

# A fast subset, to know an install works (under 2 minutes on 2 cores): the
# stream's parser and codec, the SQLite store, doctor, the CLI's commands and
# an HTML report, the agent's stream checked once, and one `rtbench run`
# through the CLI, stored and shown. Everything else (PostgreSQL, targets,
# boards, fuzzing, the system packages' skips) is left to make test.
CHECK_TESTS := tests/host/test_parser.py tests/host/test_codec.py tests/host/test_assemble.py \
  tests/host/test_store.py tests/host/test_doctor.py tests/host/test_cli_commands.py \
  tests/host/test_reports.py::test_render_html_writes_a_file \
  tests/agent/test_golden.py tests/agent/test_catalogue_snapshot.py \
  tests/e2e/test_cli.py::test_run_stores_and_shows
check: setup agent
	@echo "check: a fast subset of the tests (the whole suite: make test)"
	@$(PYTEST_ENV) $(BIN)/pytest -q -p no:cacheprovider -k "not postgresql" $(CHECK_TESTS)

# Every bench in its smoke mode (small sizes): that each still runs. The
# suite runs the same (tests/e2e/test_bench_smoke.py); full runs: bench/README.md.
bench: setup agent
	@for b in bench/bench_*.py; do echo "bench: $$b --smoke"; \
	  $(BIN)/python $$b --smoke || exit 1; done

# Each port's case table that `rtbench list` shows without building anything
# (tests/agent/test_catalogue_snapshot.py and tests/e2e/test_target_freertos.py
# say when one is out of date): the POSIX agent's --list, and each RTOS
# port's firmware's, booted once in QEMU.
catalogue: agent
	@$$($(BIN)/rtbench build) --list > host/rtbench/data/posix-cases.jsonl
	@echo "catalogue: host/rtbench/data/posix-cases.jsonl"
	@$(BIN)/python -c 'from pathlib import Path; from rtbench.targets import qemu_board; \
	  print(*(f"catalogue: {p}" for p in qemu_board.write_case_tables(Path("host/rtbench/data"))), sep="\n")'

clean:
	rm -rf build
