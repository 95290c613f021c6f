# The Makefile owns the virtual environment: every target sets it up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
N ?= 100000
# The hostile shapes at a size that took main down or near it; `HOSTILE=` for every shape at full scale.
HOSTILE ?= components=30000 metadata_list=100000 findings=10000 real_600_tools=1 empty_objects=2000000 gzip_bomb=100000000 long_line=1000000000 sparse=3000000000 int64=3

.PHONY: setup run test lint typecheck format bench bench-hostile sample clean

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
	$(BIN)/python -m bench.hostile_run $(HOSTILE)

# Peak RSS of `run` over each hostile shape (issue 12); HOSTILE="components=30000 ..." to choose.
bench-hostile: setup
	$(BIN)/python -m bench.hostile_run $(HOSTILE)

clean:
	rm -rf $(VENV) data/lake .pytest_cache .mypy_cache .ruff_cache
