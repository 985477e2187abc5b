# Two entry points: `make lab` (JupyterLab with the quickstart) and `make test`.
# Both create .venv and install what they need; running them again is cheap.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The JupyterLab extension: rebuilt and relinked into the venv when its sources change.
LABEXT := $(VENV)/.labextension
LABEXT_LINK := $(VENV)/share/jupyter/labextensions/agentik-jupyter
LABEXT_SOURCES := $(wildcard labextension/src/*.ts labextension/style/*) labextension/package.json \
	labextension/package-lock.json labextension/tsconfig.json scripts/build-labextension.sh

.PHONY: lab test test-fast bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	rm -rf $(LABEXT_LINK)  # pip would write through a stale dev link; $(LABEXT) links it again
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
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
	$(PY) -m pytest -m "not browser"

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache bench/results.json agentik_jupyter/labextension labextension/lib
