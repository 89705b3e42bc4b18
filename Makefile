# Two commands for a newcomer: `make run` and `make test`. Both create .venv if it is missing.
VENV := .venv
PYTHON := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test test-fast benchmark clean

run: $(VENV)/.requirements
	$(PYTHON) -m streamlit run app/streamlit_app.py --server.port $(PORT) --browser.gatherUsageStats false

test: $(VENV)/.requirements-dev
	@status=0; $(PYTHON) -m pytest || status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests (exit 5): failing, a test run must run tests"; fi; \
	exit $$status

test-fast: $(VENV)/.requirements-dev
	$(PYTHON) -m pytest -m "not slow"

benchmark: $(VENV)/.requirements
	$(PYTHON) benchmarks/simulate.py

$(PYTHON):
	python3 -m venv $(VENV)

$(VENV)/.requirements: requirements.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.requirements-dev: requirements.txt requirements-dev.txt | $(PYTHON)
	$(PYTHON) -m pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.requirements $@

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
