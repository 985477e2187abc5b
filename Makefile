# Two entry points: `make lab` (JupyterLab with the quickstart) and `make test`.
# Both create .venv and install what they need; running them again is cheap.
# `make dist` builds the sdist and wheel users install (the build hook compiles the extension).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The JupyterLab extension: rebuilt and relinked into the venv when its sources change.
LABEXT := $(VENV)/.labextension
LABEXT_LINK := $(VENV)/share/jupyter/labextensions/agentik-jupyter
LABEXT_SOURCES := $(wildcard labextension/src/*.ts labextension/style/*) labextension/package.json \
	labextension/package-lock.json labextension/tsconfig.json scripts/build-labextension.sh

.PHONY: lab test test-fast test-install lint typecheck dist bench clean

# The editable install skips the wheel's build hook (SKIP_JUPYTER_BUILDER): $(LABEXT) builds the
# extension and links it into the venv, and only when its sources changed.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	rm -rf $(LABEXT_LINK)  # pip would write through a stale dev link; $(LABEXT) links it again
	$(PY) -m pip install -q --upgrade pip
	SKIP_JUPYTER_BUILDER=1 $(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

$(LABEXT): $(STAMP) $(LABEXT_SOURCES)
	bash scripts/build-labextension.sh $(VENV)
	touch $(LABEXT)

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(LABEXT)
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) notebooks/quickstart.ipynb

test: $(LABEXT)
	bash scripts/ensure-chromium.sh
	$(PY) -m pytest

test-fast: $(LABEXT)
	$(PY) -m pytest -m "not browser and not install"

# build the wheel from a clean clone, install it without Node.js, drive it in JupyterLab and Notebook 7
test-install: $(STAMP)
	bash scripts/ensure-chromium.sh
	$(PY) -m pytest -m install

# ruff: the formatter's check and the linter (pyproject.toml [tool.ruff]); .ci/run runs it before the tests
lint: $(STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

# mypy on the package (pyproject.toml [tool.mypy]); .ci/run runs it after the linters
typecheck: $(STAMP)
	$(VENV)/bin/mypy

dist: $(LABEXT)
	rm -rf dist
	$(PY) -m build -o dist .

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache bench/results.json agentik_jupyter/labextension labextension/lib dist
