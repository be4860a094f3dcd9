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

.PHONY: lab test venv chromium postgres axe release outputs lock bench mutants variants clean hub hub-grade hub-stop

venv: $(VENV)/.installed

# A self-study install: tapelab and the answers distribution (solution() and the last hints). A graded
# course's environment installs tapelab alone (docs/instructor-guide.md, "Answers").
# uv installs the lock's exact pins as pip would: about 15 s from its cache instead of 90 s. It compiles
# every module's .pyc as pip does (--compile-bytecode): a sandboxed kernel cannot write them into the venv.
UV_VERSION := 0.13.9
$(VENV)/.installed: requirements.lock pyproject.toml answers/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q uv==$(UV_VERSION)
	$(BIN)/uv pip install --python $(BIN)/python -q --compile-bytecode -r requirements.lock
	$(BIN)/uv pip install --python $(BIN)/python -q --no-deps -e . -e ./answers
	touch $@

lab: venv
	# binder/jupyter: what students get (no formgrader or Create Assignment; Validate kept), as on Binder.
	JUPYTER_CONFIG_PATH=$(CURDIR)/binder/jupyter $(BIN)/jupyter lab $(ROOT_FLAG) --ip=127.0.0.1 notebooks/01_basic_tape.ipynb

# Debian's Chromium for the browser tests (never `playwright install`); installed only when missing.
chromium:
	@if [ -x /usr/bin/chromium ]; then echo "chromium present: /usr/bin/chromium"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else echo "Chromium is missing: run 'sudo make chromium' (apt-get install -y chromium)" >&2; exit 1; fi

# axe-core, pinned in tools/axe/package-lock.json, for the accessibility test of the pages tapelab writes
# (tests/browser/test_pages_accessible.py); installed from the npm registry only when the lock changed.
AXE := tools/axe/node_modules/axe-core/axe.min.js
axe: $(AXE)
$(AXE): tools/axe/package.json tools/axe/package-lock.json
	npm ci --prefix tools/axe --no-audit --no-fund --loglevel=error
	touch $@

# Debian's PostgreSQL server for the shared-gradebook tests (the tests start and stop their own
# server on 127.0.0.1); installed only when missing.
postgres:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then echo "postgresql present"; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; \
	else echo "PostgreSQL is missing: run 'sudo make postgres' (apt-get install -y postgresql)" >&2; exit 1; fi

# The course on a JupyterHub on 127.0.0.1 (as root; docs/instructor-guide.md, "Running the course on a hub"):
# an instructor and HUB_STUDENTS demo students, nbgrader's exchange, the six notebooks released, each student
# their own numbers (HUB_VARIANTS=notebook: the text's for everyone; set at the first start of a hub).
# `make hub-grade A=01_basic_tape` collects, grades with tapelab and releases feedback; `make hub-stop` ends it all.
HUB_PORT ?= 8000
HUB_STUDENTS ?= 3
HUB_VARIANTS ?= per-student
hub: venv
	$(BIN)/python grader/hub/hubctl.py start --port $(HUB_PORT) --students $(HUB_STUDENTS) --variants $(HUB_VARIANTS)

hub-grade: venv
	$(BIN)/python grader/hub/hubctl.py grade $(A)

hub-stop: venv
	$(BIN)/python grader/hub/hubctl.py stop

# Everything: unit, checker, release, grading (local, Dask, PostgreSQL), browser and Binder tests,
# plus strict nbval on solutions/.
test: venv chromium postgres axe
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder --durations=25 --nbval --nbval-current-env tests solutions

# Student notebooks and the answers distribution's data are generated from solutions/, never edited by hand.
release: venv
	$(BIN)/tapelab release

# Re-execute the solution notebooks so their stored outputs (compared by nbval) are fresh.
outputs: venv
	$(BIN)/python tools/execute.py

# Speed and memory budgets (not part of `make test`): notebooks against the TF-import floor, widget
# updates, `tapelab grade` against stock `nbgrader autograde`, and widget round trips in Chromium.
bench: venv
	$(BIN)/python bench/notebooks.py
	$(BIN)/python bench/grading.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/kernel_start.py
	$(BIN)/python bench/kernel_start.py --compare ready
	$(BIN)/python bench/kernel_start.py --compare reconnect
	$(BIN)/python bench/kernel_start.py --compare stop
	$(BIN)/python bench/kernel_start.py --compare view
	$(BIN)/python bench/guard_step.py
	$(BIN)/python bench/guard_step.py --notebook 01_basic_tape
	$(BIN)/python bench/feedback_pages.py
	$(BIN)/python bench/pin.py
	$(BIN)/python bench/widgets_browser.py
	$(BIN)/python bench/cli.py
	$(BIN)/python bench/checks.py
	$(BIN)/python bench/diagnose.py
	$(BIN)/python bench/flight.py
	$(BIN)/python bench/lint.py
	$(BIN)/python bench/corpus.py

# Every mutant of every reference answer, plus instant-check/nbgrader agreement on all of them
# (`make test` runs a bounded sample of both).
mutants: venv
	$(BIN)/python tools/mutants.py

# Every exercise in variants on 20 seeds (`make test` checks 2): reference, other variants, catalogued mistakes.
variants: venv
	TAPELAB_VARIANT_SEEDS=20 $(BIN)/python -m pytest tests/exercises/test_variants.py -q -p no:cacheprovider

lock:
	$(PYTHON) tools/lock.py

clean:
	rm -rf $(VENV) .pytest_cache build src/*.egg-info answers/src/*.egg-info tools/axe/node_modules
