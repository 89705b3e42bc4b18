# Two commands for a newcomer: `make run` and `make test`. Both create .venv if it is missing.
VENV := .venv
PYTHON := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test test-fast lint benchmark clean

run: $(VENV)/.requirements
	$(PYTHON) -m streamlit run app/serve.py --server.port $(PORT) --browser.gatherUsageStats false

# lint (style and types are CI's job) beside the parallel tests, then the `timing` tests alone. Lint is mostly mypy:
# a minute on one core that the tests, waiting on servers, browsers and child processes, leave free (two cores
# run three test workers: a clean run used 1.1 of its 2 cores with two). The parallel tier is all but `timing`, on
# three workers (pytest-xdist), listing its slowest 25; the `timing` tests measure time or watch the whole machine,
# so they run alone, after lint has finished. pytest's exit 5 (no tests collected) is a failure: a test run must
# run tests
test: $(VENV)/.requirements-dev
	@lint_log=$$(mktemp); first=0; second=0; linted=0; \
	$(MAKE) --no-print-directory -f $(firstword $(MAKEFILE_LIST)) lint >$$lint_log 2>&1 & lint_job=$$!; \
	$(PYTHON) -m pytest -n 3 --dist worksteal -m "not timing" --durations=25 || first=$$?; \
	wait $$lint_job || linted=$$?; \
	echo "== lint (ran beside the tests) =="; cat $$lint_log; rm -f $$lint_log; \
	$(PYTHON) -m pytest -p no:xdist -m timing || second=$$?; \
	for status in $$first $$second; do \
	    if [ $$status -eq 5 ]; then echo "pytest collected no tests (exit 5): failing, a test run must run tests"; fi; \
	done; \
	if [ $$linted -ne 0 ]; then echo "lint failed (exit $$linted): see above"; exit $$linted; fi; \
	if [ $$first -ne 0 ]; then exit $$first; fi; exit $$second

# the fast tier: engine and app logic, no processes, no AppTest, no browser, no timing ratios (about 30 s on 2 cores)
test-fast: $(VENV)/.requirements-dev
	$(PYTHON) -m pytest -m "not slow and not timing" -q

# style, types, the import contracts (.importlinter: the engine's layers, the app's layers, pages apart) and
# dead code (vulture at 80 % confidence; vulture_whitelist.py names what frameworks call by name)
lint: $(VENV)/.requirements-dev
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/vulture engine app vulture_whitelist.py --min-confidence 80

benchmark: $(VENV)/.requirements
	$(PYTHON) benchmarks/simulate.py

$(PYTHON):
	python3 -m venv $(VENV)

# the project itself is installed editable (no dependencies: requirements.txt pins them), so `import engine`
# works from the app, the benchmarks and the tests without sys.path edits
$(VENV)/.requirements: requirements.txt pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements.txt
	$(PYTHON) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.requirements-dev: requirements.txt requirements-dev.txt pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements-dev.txt
	$(PYTHON) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(VENV)/.requirements $@

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache *.egg-info
