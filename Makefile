# Two commands for a newcomer: `make run` and `make test`. Both create .venv if it is missing.
VENV := .venv
PYTHON := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test test-fast lint benchmark clean

run: $(VENV)/.requirements
	$(PYTHON) -m streamlit run app/serve.py --server.port $(PORT) --browser.gatherUsageStats false

# lint first (style and types are CI's job), then every test: all but `timing` on three workers (pytest-xdist;
# most tests wait on a server, a browser or a child process, so two cores run three of them at once: a clean run
# used 1.1 of its 2 cores with two workers), then the `timing` tests alone, since they measure time or watch the
# whole machine; the slowest 25 are listed. pytest's exit 5 (no tests collected) is a failure: a test run must run
# tests
test: lint
	@first=0; second=0; \
	$(PYTHON) -m pytest -n 3 --dist worksteal -m "not timing" --durations=25 || first=$$?; \
	$(PYTHON) -m pytest -p no:xdist -m timing || second=$$?; \
	for status in $$first $$second; do \
	    if [ $$status -eq 5 ]; then echo "pytest collected no tests (exit 5): failing, a test run must run tests"; fi; \
	done; \
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
