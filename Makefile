# Two entry points: `make lab` (JupyterLab with the quickstart) and `make test`.
# Both create .venv and install what they need; running them again is cheap.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: lab test test-fast bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

lab: $(STAMP)
	$(VENV)/bin/jupyter lab $(ROOT_FLAG) notebooks/quickstart.ipynb

test: $(STAMP)
	bash scripts/ensure-chromium.sh
	$(PY) -m pytest

test-fast: $(STAMP)
	$(PY) -m pytest -m "not browser"

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .pytest_cache bench/results.json
