# The Makefile owns the virtual environment: every target sets it up first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
N ?= 100000
# The hostile shapes at a size that took main down or near it; `HOSTILE=` for every shape at full scale.
HOSTILE ?= components=30000 metadata_list=100000 findings=10000 real_600_tools=1 empty_objects=2000000 gzip_bomb=100000000 gzip_renamed=100000000 long_line=1000000000 sparse=3000000000 int64=3

.PHONY: setup setup-dev run test test-fast test-soak lint typecheck format bench bench-hostile bench-hostile-mixed sample clean

# Running needs only the pipeline's own dependencies; `make run EXTRAS=spark` adds Spark
# for `--engine spark`. Tests and the linters add the dev tools and Spark (its engine's
# tests run too).
EXTRAS ?=
DEV_EXTRAS := dev,spark

# One stamp per extras set: asking for an extra that is not installed yet runs pip again,
# and `make run` after `make test` installs nothing.
comma := ,
stamp = $(VENV)/.installed-$(or $(subst $(comma),-,$(1)),base)
RUN_STAMP := $(call stamp,$(EXTRAS))
DEV_STAMP := $(call stamp,$(DEV_EXTRAS))

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamp's suffix names the extras: .installed-dev-spark installs '.[dev,spark]',
# .installed-base the pipeline alone, which any install of extras newer than pyproject.toml
# has already done.
$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(if $(filter base,$*),find $(VENV) -maxdepth 1 -name '.installed-*' -newer pyproject.toml | grep -q . ||) \
	$(BIN)/python -m pip install --quiet -e '.$(if $(filter-out base,$*),[$(subst -,$(comma),$*)])'
	touch $@

setup: $(RUN_STAMP)

setup-dev: $(DEV_STAMP)

run: setup
	$(BIN)/python -m pipeline run

sample: setup
	$(BIN)/python -m tools.simulate --out data/sample

lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: setup-dev
	$(BIN)/mypy

format: setup-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# loadfile: a file's tests share one worker, so a module's fixtures (a built lake, the Spark
# session and its JVM) are made once. (xdist's loadgroup does not group under pytest 9: the
# group suffix it writes to item._nodeid is no longer part of the node id.)
# Bytecode caching on (an empty PYTHONDONTWRITEBYTECODE is unset): with it off, every worker
# and every `python -m pipeline` a test starts compiles the sources again, and pytest rewrites
# hypothesis' 75 modules, anyio's and typeguard's (pytest11 plugins) each start: 11 s of a
# 16 s collection, per worker. The caches go to the gitignored __pycache__ folders.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n 2 --dist loadfile

test: lint typecheck
	$(PYTEST)

# The fast tier: everything but the tests marked slow (kill -9, Spark, Chromium, the
# wheel, large fuzz and simulation runs); no linters.
test-fast: setup-dev
	$(PYTEST) -m "not slow" --hypothesis-profile=fast

# The soak tier: every test, four times the property examples and the larger generated
# inputs (tests/examples.py) that `make test` once ran; for a night, not a commit.
test-soak: setup-dev
	$(PYTEST) --hypothesis-profile=soak

bench: setup
	$(BIN)/python -m bench.run --n $(N)
	$(BIN)/python -m bench.hostile_run $(HOSTILE)

# Peak RSS of `run` over each hostile shape (issue 12); HOSTILE="components=30000 ..." to choose.
bench-hostile: setup
	$(BIN)/python -m bench.hostile_run $(HOSTILE)

# Issue 12's acceptance scenario: one run over every shape at full size with normal records
# (`MIXED="gzip_bomb=100000000"` to shrink a shape); exits 1 unless every line is accounted for.
MIXED ?=
bench-hostile-mixed: setup
	$(BIN)/python -m bench.hostile_run --mixed $(MIXED)

clean:
	rm -rf $(VENV) data/lake .pytest_cache .mypy_cache .ruff_cache
