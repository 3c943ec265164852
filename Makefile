# spark_dp developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ARGS   ?=

export PYSPARK_PYTHON        := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP        ?= 127.0.0.1

DEMO := demo_output

.PHONY: help setup bench-setup airflow-venv test lint format demo bench bench-quick bench-compare package clean

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: $(VENV)/.installed ## create .venv and install spark_dp with its test tools

$(VENV)/.installed: setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

airflow-venv: .venv-airflow/.installed ## Airflow in its own venv (for the DAG test)

.venv-airflow/.installed:
	$(PYTHON) -m venv .venv-airflow
	.venv-airflow/bin/python -m pip install --quiet --upgrade pip
	.venv-airflow/bin/python -m pip install --quiet apache-airflow apache-airflow-providers-apache-spark
	touch $@

test: setup airflow-venv lint ## lint and type-check, then run the whole test suite (what CI runs)
	$(PY) -m pytest $(ARGS)

lint: setup ## ruff lint, ruff format check, mypy type check of spark_dp/
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

format: setup ## apply ruff formatting and import sorting
	$(PY) -m ruff check --fix --select I .
	$(PY) -m ruff format .

demo: setup ## generate data and run every job on local Spark (outputs in demo_output/)
	$(PY) jobs/generate.py --kind zipf --users 20000 --output $(DEMO)/words --seed 7 --overwrite
	$(PY) jobs/generate.py --kind skewed --records 100000 --records-per-user 4 \
	    --output $(DEMO)/graph --seed 7 --overwrite
	$(PY) jobs/partition_selection.py --input $(DEMO)/words --output $(DEMO)/vocabulary \
	    --algorithm mad2r --epsilon 1 --delta 1e-5 --overwrite
	$(PY) jobs/distinct_count.py --input $(DEMO)/words --epsilon 1 \
	    --report $(DEMO)/distinct_count.json
	$(PY) jobs/contribution_bounding.py --input $(DEMO)/graph --output $(DEMO)/bounded \
	    --capacity 4 --driver-threshold-rows 20000 --overwrite
	@echo "demo done: reports in $(DEMO)/*.json (noise from OS entropy: numbers differ per run)"

bench-setup: $(VENV)/.bench-installed

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $@

# One harness run per family (each with its baseline and peers measured in the same run), so
# a long family never loses another's table; results in bench/results/<family>/.
bench: setup bench-setup ## full benchmark, about 75 minutes here (bench/results/*/results-full.md)
	$(PY) -m bench --scale full --only partition_selection/ --only peer/pipeline-dp \
	    --out bench/results/partition_selection $(ARGS)
	$(PY) -m bench --scale full --only distinct_count/ --only peer/knop \
	    --out bench/results/distinct_count $(ARGS)
	$(PY) -m bench --scale full --only contribution_bounding/ \
	    --out bench/results/contribution_bounding $(ARGS)

bench-quick: setup bench-setup ## a small benchmark run for a smoke check
	$(PY) -m bench --scale quick $(ARGS)

# Issue 13's figure: MAD2R and the exact distinct count at revision BEFORE and at this tree,
# alternating REPEAT times in one invocation (bench/results/compare/compare.md).
BEFORE ?= e9f5fc2
REPEAT ?= 3
bench-compare: setup bench-setup ## MAD2R and distinct count: BEFORE=<rev> vs this tree, one run
	$(PY) -m bench.compare --before $(BEFORE) --repeat $(REPEAT) \
	    --only partition_selection/mad2r/zipf-5m --only distinct_count/exact-zipf-1m $(ARGS)

package: setup ## build dist/spark_dp.zip for spark-submit --py-files
	$(PY) -m spark_dp.packaging dist/spark_dp.zip

clean: ## remove build artifacts, caches and demo output
	rm -rf dist build *.egg-info .pytest_cache .ruff_cache .hypothesis spark-warehouse \
	       $(DEMO) bench/work
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
