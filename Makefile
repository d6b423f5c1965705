# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
# Windows virtualenvs keep their programs in Scripts\ (CI runs make there from Git Bash).
BIN := $(VENV)/$(if $(filter Windows_NT,$(OS)),Scripts,bin)
EXE := $(if $(filter Windows_NT,$(OS)),.exe,)

.PHONY: demo test lint typecheck unit bench docs goldens perf perf-dask serve-load fuzz experiments clean dist dist-check image-check

$(BIN)/python$(EXE):
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "arh needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python$(EXE)
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

# (with the dask extra: its tests run in `make test`, on a local cluster; and the LangGraph and
# OpenAI Agents SDK extras, whose adapters' tests run on each framework's fake models. CrewAI's
# extra is left out: it adds 120 packages, 669 MiB and about 3 minutes, tools/extras_footprint.py)
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python$(EXE)
	$(BIN)/python -m pip install --quiet -e '.[dev,dask,langgraph,openai-agents]'
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	@echo '$$ arh validate --policy samples/policy_trajectory.json samples/traces/'
	@$(BIN)/arh validate --policy samples/policy_trajectory.json samples/traces/; \
	  status=$$?; echo "(exit status $$status: 0 = every trace passed, 1 = a trace failed; 2 and 3 = the check could not run, 4 = the machine failed; docs/exit-codes.md)"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests tools benchmarks examples
	$(BIN)/ruff format --check src tests tools benchmarks examples
	$(BIN)/shellcheck --shell=bash --severity=style action/run.sh .ci/run

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy --strict src

unit: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

test: lint typecheck unit bench

# The benchmark suite (seconds): seeded cases and the thresholds of BENCHMARK-METHODOLOGY.md;
# exits 1 on a breach. `python benchmarks/accuracy/run.py --write` also rewrites
# BENCHMARK-RESULTS.md.
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/accuracy/run.py

# The sdist and wheel to publish (release workflow), then the packaging checks run against them:
# twine check, metadata, contents, and an install into a clean virtualenv. (`make test` runs the
# same checks on a wheel it builds itself, without network.)
dist: $(VENV)/.installed-dev
	rm -rf dist
	$(BIN)/python -m build --outdir dist .

dist-check: dist
	ARH_DIST_DIR=dist $(BIN)/python -m pytest -q tests/test_packaging.py

goldens: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q tests/test_report_formats.py --update-goldens

docs: $(VENV)/.installed
	$(BIN)/arh rules --format markdown > docs/rules.md

# Performance benchmark (minutes; not part of `make test`): generates corpora in a temporary
# directory, prints the table and rewrites the performance section of the results file.
# Example: make perf PERF_ARGS='--quick' or PERF_ARGS='--scales 1000x200 --repeat 5'
perf: $(VENV)/.installed
	$(BIN)/python benchmarks/perf/perf.py --write $(PERF_ARGS)
	$(MAKE) --no-print-directory perf-dask

# --executor dask on a local cluster of two workers against --jobs 2 (needs the dask extra,
# which the dev install brings); rewrites its section of the results file.
perf-dask: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/perf/dask_perf.py --write $(DASK_PERF_ARGS)

# A bounded local load test of arh serve on a 10,000-trace runs directory (a minute or two; not
# part of `make test`); rewrites its section of the results file.
SERVE_LOAD_ARGS ?= --requests 50 --threads 4
serve-load: $(VENV)/.installed
	$(BIN)/python benchmarks/serve_load.py --write $(SERVE_LOAD_ARGS)

# The experiments of docs/experiments.md (a few minutes; not part of `make test`, whose
# tests/test_experiments.py runs the reduced `--check --quick`): every reference agent with each
# gateway feature removed, same-seed repeats and varied seeds; rewrites docs/experiments.md and
# docs/experiments.json. Example: make experiments EXPERIMENTS_ARGS='--jobs 2'
experiments: $(VENV)/.installed
	$(BIN)/python tools/experiments.py --write $(EXPERIMENTS_ARGS)

# The safety prefilter's differential property tests for a long time (minutes; not part of
# `make test`), with fresh random examples in each round. Example: make fuzz FUZZ_MINUTES=60
FUZZ_MINUTES ?= 10
fuzz: $(VENV)/.installed-dev
	$(BIN)/python tools/fuzz_prefilter.py --minutes $(FUZZ_MINUTES)

# Builds the container image and checks it end to end (docs/container.md; a minute, several
# more the first time it makes its local base; needs a Docker daemon; not part of `make test`).
# Example: make image-check IMAGE_CHECK_ARGS='--base python:3.12-slim-bookworm'
image-check:
	$(PYTHON) tools/container_check.py $(IMAGE_CHECK_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis src/*.egg-info
