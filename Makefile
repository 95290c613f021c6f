# The Makefile owns the virtual environment: every target sets it up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
N ?= 100000

.PHONY: setup run test lint typecheck format bench sample clean

# The Spark extra is installed too, so `make test` runs the Spark engine's test.
EXTRAS ?= dev,spark

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(BIN)/python -m pipeline run

sample: setup
	$(BIN)/python -m pipeline simulate --out data/sample

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup
	$(BIN)/mypy

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

test: lint typecheck
	$(BIN)/python -m pytest -n 2

bench: setup
	$(BIN)/python -m bench.run --n $(N)

clean:
	rm -rf $(VENV) data/lake .pytest_cache .mypy_cache .ruff_cache
