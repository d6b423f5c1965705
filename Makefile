# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck unit bench docs goldens perf clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "arh needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	@echo '$$ arh validate --policy samples/policy_trajectory.json samples/traces/'
	@$(BIN)/arh validate --policy samples/policy_trajectory.json samples/traces/; \
	  status=$$?; echo "(exit status $$status: 0 = every trace passed, 1 = a trace failed or an input was bad)"

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests tools benchmarks
	$(BIN)/ruff format --check src tests tools benchmarks

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy --strict src

unit: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q

test: lint typecheck unit bench

# The benchmark suite (seconds): seeded cases and the thresholds of BENCHMARK-METHODOLOGY.md;
# exits 1 on a breach. `python benchmarks/run.py --write` also rewrites BENCHMARK-RESULTS.md.
bench: $(VENV)/.installed
	$(BIN)/python benchmarks/run.py

goldens: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -q tests/test_report_formats.py --update-goldens

docs: $(VENV)/.installed
	$(BIN)/arh rules --format markdown > docs/rules.md

# Performance benchmark (minutes; not part of `make test`): generates corpora in a temporary
# directory, prints the table and rewrites the performance section of the results file.
# Example: make perf PERF_ARGS='--quick' or PERF_ARGS='--scales 1000x200 --repeat 5'
perf: $(VENV)/.installed
	$(BIN)/python benchmarks/perf.py --write $(PERF_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis src/*.egg-info
