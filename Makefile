# Two entry points: `make lab` (JupyterLab with the quickstart) and `make test`.
# Both create .venv and install what they need; running them again is cheap. `make lab` installs
# what running needs (the package with its `lab` extra); `make test` (and lint, typecheck, bench,
# dist) the `test` extra, which includes it.
# `make dist` builds the sdist and wheel users install (the build hook compiles the extension).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# one stamp per extra installed; the test extra includes the lab extra, so installing it stamps both
STAMP_LAB := $(VENV)/.installed-lab
STAMP := $(VENV)/.installed-test
# The JupyterLab extension: rebuilt and relinked into the venv when its sources change.
LABEXT := $(VENV)/.labextension
LABEXT_LINK := $(VENV)/share/jupyter/labextensions/agentik-jupyter
LABEXT_SOURCES := $(wildcard labextension/src/*.ts labextension/style/*) labextension/package.json \
	labextension/package-lock.json labextension/tsconfig.json scripts/build-labextension.sh

.PHONY: lab test test-fast test-install lint typecheck dist bench clean
# (two installs into one venv must never run at once)
.NOTPARALLEL:

# The editable install skips the wheel's build hook (SKIP_JUPYTER_BUILDER): $(LABEXT) builds the
# extension and links it into the venv, and only when its sources changed (or an install removed it).
# --no-compile: pip would compile every module of every package (pyspark's, pandas' tests...) to
# bytecode (pyspark, pandas and JupyterLab into a new venv: 40 s of CPU with it, 16 s without);
# Python compiles what is imported, when it is first imported.
define install
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	rm -rf $(LABEXT_LINK)  # pip would write through a stale dev link; $(LABEXT) links it again
	$(PY) -m pip install -q --upgrade pip
	SKIP_JUPYTER_BUILDER=1 $(PY) -m pip install -q --no-compile -e '.[$(1)]'
endef

$(STAMP_LAB): pyproject.toml
	$(call install,lab)
	touch $(STAMP_LAB)

$(STAMP): pyproject.toml
	$(call install,test)
	touch $(STAMP) $(STAMP_LAB)

$(LABEXT): $(STAMP_LAB) $(LABEXT_SOURCES)
	bash scripts/build-labextension.sh $(VENV)
	touch $(LABEXT)

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(LABEXT)
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) notebooks/quickstart.ipynb

# The suite on TEST_WORKERS pytest-xdist workers, a module (or an xdist_group) per work unit
# (tests/parallel.py); browser modules share each worker's servers and Chromium
# (tests/shared_servers.py). The 25 slowest tests are listed at the end. Four workers on two
# cores: a browser test waits on its page, server or kernel much of its time. Units go out in
# tests/parallel.py's order (slow first); xdist would otherwise send the modules with most tests first.
# Python keeps its bytecode for the run even where PYTHONDONTWRITEBYTECODE is set (as on CI's
# machines): the suite starts hundreds of kernels and servers, and each would compile our
# modules again, and each worker the test modules (half of its collection time).
TEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=25
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest

# (the test extra first: installing it removes the extension's link, which $(LABEXT) then makes again)
test: $(STAMP) $(LABEXT)
	bash scripts/ensure-chromium.sh
	$(PYTEST) $(PYTEST_PARALLEL)

test-fast: $(STAMP) $(LABEXT)
	$(PYTEST) $(PYTEST_PARALLEL) -m "not browser and not install"

# build the wheel from a clean clone, install it without Node.js, drive it in JupyterLab and Notebook 7
test-install: $(STAMP)
	bash scripts/ensure-chromium.sh
	$(PYTEST) -m install

# ruff: the formatter's check and the linter (pyproject.toml [tool.ruff]); .ci/run runs it before the tests
lint: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

# mypy on the package (pyproject.toml [tool.mypy]); .ci/run runs it after the linters
typecheck: $(STAMP)
	$(VENV)/bin/mypy

dist: $(STAMP) $(LABEXT)
	rm -rf dist
	$(PY) -m build -o dist .

# jupyter-mcp-server, which bench/mcp_compare.py runs beside our endpoint, in a venv of its own: in the
# test venv its Jupyter server extensions would load in every test server (offline: that bench says so)
JMS := $(VENV)/jupyter-mcp-server
JMS_VERSION := 2.2.4

$(JMS)/.installed: $(STAMP)
	test -x $(JMS)/bin/python || $(PYTHON) -m venv $(JMS)
	$(JMS)/bin/python -m pip install -q 'jupyter-mcp-server==$(JMS_VERSION)' && touch $@ \
		|| echo "jupyter-mcp-server could not be installed: bench/mcp_compare.py measures our side only"

bench: $(STAMP) $(JMS)/.installed
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache bench/results.json agentik_jupyter/labextension labextension/lib dist
