# tapelab: `make lab` to study, `make test` to check everything. Both set up .venv from the lock.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# nbgrader shells out to alembic: the venv's bin/ must be on PATH in every recipe.
export PATH := $(BIN):$(PATH)
export TF_CPP_MIN_LOG_LEVEL := 2
export TF_ENABLE_ONEDNN_OPTS := 0
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
JOBS ?= 2

.PHONY: lab test venv release outputs lock clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.lock
	$(BIN)/pip install --disable-pip-version-check -q --no-deps -e .
	touch $@

lab: venv
	$(BIN)/jupyter lab $(ROOT_FLAG) --ip=127.0.0.1 notebooks/01_basic_tape.ipynb

# Unit, checker, release and grading tests, plus strict nbval on every solution notebook.
test: venv
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval --nbval-current-env tests solutions

# Student notebooks are generated from solutions/, never edited by hand.
release: venv
	$(BIN)/tapelab release

# Re-execute the solution notebooks so their stored outputs (compared by nbval) are fresh.
outputs: venv
	$(BIN)/python tools/execute.py

lock:
	$(PYTHON) tools/lock.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info
