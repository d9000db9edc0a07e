# The two commands that matter: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
export LITELLM_LOCAL_MODEL_COST_MAP := True
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: demo test ui lint bench clean install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

$(DAGSTER_HOME)/dagster.yaml:
	@mkdir -p $(DAGSTER_HOME)
	@printf 'telemetry:\n  enabled: false\n' > $@

demo: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dia demo

test: $(STAMP)
	$(BIN)/python -m pytest

ui: $(STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dagster dev -w workspace.yaml

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python bench/interpret.py

clean:
	rm -rf dia_workspace .dagster_home
