# spark_dp developer commands. `make help` lists them.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
ARGS   ?=
# The suite runs in WORKERS pytest processes (pytest-xdist), whole test files per process: its
# small Spark jobs and spark-submits wait on start-up and scheduling much of the time, so one
# process leaves cores idle (each process has its own local[2] session; WORKERS=0: one process).
WORKERS ?= 2
XDIST   := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)

export PYSPARK_PYTHON        := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))
export SPARK_LOCAL_IP        ?= 127.0.0.1

DEMO := demo_output

# SUBSET=ci (.ci/run): each compatibility suite runs its CI subset, named beside the suite
# below, so that CI's 90 minutes hold them after the whole suite; without it (`make test-compat`)
# every test of each runs. $(call subset,CI,ALL): CI's words under SUBSET=ci, else ALL's.
SUBSET ?= all
subset = $(if $(filter ci,$(SUBSET)),$(1),$(2))

# pyspark 3.5, the oldest Spark spark_dp supports, runs the Spark tests of each family (and of
# the shared code) in its own venv; the whole suite runs on the newest pyspark. CI leaves out
# the plan-layout and session-state files (their tests run on the newest pyspark).
SPARK35_VENV  := .venv-spark35
SPARK35_TESTS_CI := tests/partition_selection/test_api.py tests/partition_selection/test_mechanisms.py \
                 tests/partition_selection/test_one_pass.py \
                 tests/contribution_bounding/test_proposal_spark.py \
                 tests/contribution_bounding/test_passes_spark.py \
                 tests/distinct_count/test_spark_curves.py tests/distinct_count/test_api.py \
                 tests/storage/test_readers_and_writers.py tests/storage/test_file_snapshot.py \
                 tests/runtime/test_generators.py \
                 tests/runtime/test_tracking.py
SPARK35_TESTS := $(SPARK35_TESTS_CI) tests/partition_selection/test_layout.py \
                 tests/runtime/test_nothing_persisted.py
# Other Pythons (3.11 is the main one): the driver-side tests (every test without a Spark
# session), where found, but those marked slow or main_python (pyproject.toml's markers).
# PY_TESTS narrows them to some files or folders; CI's: the driver-side calibration, GEM,
# randomness, accounting, command line and configuration, and the import graph.
PY_VERSIONS   ?= 3.10 3.12
PY_TESTS_CI   := tests/repo/test_import_graph.py tests/dp/test_calibration.py \
                 tests/dp/test_protocol.py tests/partition_selection/test_calibration.py \
                 tests/partition_selection/test_mad_constants.py \
                 tests/distinct_count/test_calibration.py tests/distinct_count/test_gem.py \
                 tests/randomness tests/budget/test_accounting.py tests/budget/test_filters.py \
                 tests/jobs/test_cli.py tests/jobs/test_config.py
PY_TESTS      ?= $(call subset,$(PY_TESTS_CI))

# Delta Lake: the Delta suite (tests/delta) runs on each Spark line with the jars
# of the Delta release built for it, fetched once from Maven Central into .cache/jars
# (.ci/fetch-jars: checked against their SHA-1; a second run is offline): pyspark 3.5 with
# delta-spark 3.3.2, and pyspark 4.2.0 (its own venv) with delta-spark 4.4.0, which is built
# against Spark 4.2.0. Delta calls Spark internals: delta-spark_2.13 4.4.0 on the newest pyspark
# (4.3.0) fails its first write with NoSuchMethodError, and no Delta release for Spark 4.3 is
# served (delta-spark 4.4.1's jars are not on Maven Central).
DELTA_VERSION  := 3.3.2
DELTA_JARS_DIR := .cache/jars/delta-$(DELTA_VERSION)
DELTA_ARTIFACTS := io.delta:delta-spark_2.12:$(DELTA_VERSION) io.delta:delta-storage:$(DELTA_VERSION)
DELTA4_VERSION   := 4.4.0
DELTA4_SPARK     := 4.2.0
DELTA4_VENV      := .venv-spark42
DELTA4_JARS_DIR  := .cache/jars/delta-$(DELTA4_VERSION)-spark$(DELTA4_SPARK)
DELTA4_ARTIFACTS := io.delta:delta-spark_4.2_2.13:$(DELTA4_VERSION) io.delta:delta-storage:$(DELTA4_VERSION)

# GraphFrames: no Maven repository reachable here serves io.graphframes, so its jars
# (0.11.0 plus 11 commits, built from GraphFrames' source, one per Spark line) are copied from a
# local folder into .cache/jars, each checked against the SHA-256 listed beside it
# (.ci/copy-jars); without that folder the GraphFrames suite skips, saying why. On a machine that
# reaches Maven Central the same code is --packages io.graphframes:graphframes-spark4_2.13:0.11.0.
GRAPHFRAMES_BUILD    := 0.11.0-11-ge49a655b
GRAPHFRAMES_SRC      ?= ../shared/jars/graphframes
GRAPHFRAMES_JARS_DIR := .cache/jars/graphframes-$(GRAPHFRAMES_BUILD)
GRAPHFRAMES_JAR4     := $(GRAPHFRAMES_JARS_DIR)/graphframes-spark4_2.13-$(GRAPHFRAMES_BUILD).jar
GRAPHFRAMES_JAR35    := $(GRAPHFRAMES_JARS_DIR)/graphframes-spark3_2.12-$(GRAPHFRAMES_BUILD).jar

# HDFS: a real one for the files' digest on hdfs:// inputs (tests/storage/test_file_snapshot.py),
# Hadoop's MiniDFSCluster in a JVM of its own (tests/support/mini_dfs.py): the shaded
# hadoop-client-minicluster with the Hadoop client and the few jars its command-line manager
# loads, fetched once from Maven Central into .cache/jars (a second run is offline). One namenode
# serves the Hadoop clients of both Spark lines.
HADOOP_VERSION := 3.5.0
HDFS_JARS_DIR  := .cache/jars/hadoop-minicluster-$(HADOOP_VERSION)
HDFS_ARTIFACTS := $(foreach a,minicluster api runtime,org.apache.hadoop:hadoop-client-$(a):$(HADOOP_VERSION)) \
                  org.junit.jupiter:junit-jupiter-api:5.10.2 org.junit.platform:junit-platform-commons:1.10.2 \
                  org.opentest4j:opentest4j:1.3.0 org.slf4j:slf4j-api:1.7.36 commons-logging:commons-logging:1.3.5
export SPARK_DP_HDFS_JARS := $(abspath $(HDFS_JARS_DIR))

.PHONY: help setup docs bench-setup bench-scale bench-lines airflow-venv connect-setup spark35-setup test lint format demo \
        bench bench-quick bench-compare audit package clean airflow-test test-connect test-spark35 test-pythons \
        pythons-setup compat-setup hdfs-jars \
        test-compat sweep delta-jars test-delta delta4-setup graphframes-jars test-graphframes \
        bench-components

help: ## list the targets
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: $(VENV)/.installed ## create .venv and install spark_dp with its test tools

# The audit's broken variants are a package of their own beside spark_dp (selftest/), never
# in a user install: the self-test and the tests load them from here.
$(VENV)/.installed: setup.py pyproject.toml selftest/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test,docs]" -e selftest
	touch $@

airflow-venv: .venv-airflow/.installed ## Airflow in its own venv (for the DAG test)

.venv-airflow/.installed:
	$(PYTHON) -m venv .venv-airflow
	.venv-airflow/bin/python -m pip install --quiet --upgrade pip
	.venv-airflow/bin/python -m pip install --quiet apache-airflow apache-airflow-providers-apache-spark
	touch $@

# The Airflow DAG run, Spark Connect and the sweep run side by side after the suite (separate
# processes and directories; each one's output printed whole when it ends).
test: setup hdfs-jars airflow-venv connect-setup lint ## lint, the whole suite, the Airflow DAG run, Spark Connect, the sweep
	$(PY) -m pytest $(XDIST) $(ARGS)
	$(MAKE) --no-print-directory -j3 --output-sync=target airflow-test test-connect sweep

airflow-test: setup airflow-venv package ## run the shipped DAG with `airflow dags test` on local Spark
	SPARK_DP_TEST_SUITE=airflow_run $(PY) -m pytest tests/airflow_run -q

connect-setup: $(VENV)/.connect-installed

$(VENV)/.connect-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[test,connect]"
	touch $@

test-connect: setup connect-setup ## library calls and a job over Spark Connect (a local server)
	SPARK_DP_TEST_SUITE=connect $(PY) -m pytest tests/connect -q

# The sweep: 300 bad command lines as a user would type them (tests/sweep/cases.py); root
# mounts a small tmpfs for the full-disk cases (skipped, saying why, where that is refused).
sweep: setup ## 300 careless or hostile command lines: exit code, one line, no trace, nothing lost
	SPARK_DP_TEST_SUITE=sweep $(PY) -m pytest tests/sweep -q -s $(ARGS)

spark35-setup: $(SPARK35_VENV)/.installed

$(SPARK35_VENV)/.installed: setup.py pyproject.toml
	$(PYTHON) -m venv $(SPARK35_VENV)
	$(SPARK35_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(SPARK35_VENV)/bin/python -m pip install --quiet -e ".[test]" "pyspark>=3.5,<3.6"
	touch $@

test-spark35: spark35-setup hdfs-jars ## each family's Spark tests on pyspark 3.5
	PYSPARK_PYTHON=$(abspath $(SPARK35_VENV)/bin/python) \
	PYSPARK_DRIVER_PYTHON=$(abspath $(SPARK35_VENV)/bin/python) \
	    $(SPARK35_VENV)/bin/python -m pytest -q $(XDIST) $(call subset,$(SPARK35_TESTS_CI),$(SPARK35_TESTS))

hdfs-jars: $(HDFS_JARS_DIR)/.fetched ## fetch Hadoop's MiniDFSCluster jars into .cache/jars (once)

$(HDFS_JARS_DIR)/.fetched:
	$(PYTHON) .ci/fetch-jars $(HDFS_JARS_DIR) $(HDFS_ARTIFACTS)
	touch $@

delta-jars: $(DELTA_JARS_DIR)/.fetched ## fetch Delta Lake's jars into .cache/jars (once)

$(DELTA_JARS_DIR)/.fetched:
	$(PYTHON) .ci/fetch-jars $(DELTA_JARS_DIR) $(DELTA_ARTIFACTS)
	touch $@

$(DELTA4_JARS_DIR)/.fetched:
	$(PYTHON) .ci/fetch-jars $(DELTA4_JARS_DIR) $(DELTA4_ARTIFACTS)
	touch $@

delta4-setup: $(DELTA4_VENV)/.installed $(DELTA4_JARS_DIR)/.fetched

$(DELTA4_VENV)/.installed: setup.py pyproject.toml
	$(PYTHON) -m venv $(DELTA4_VENV)
	$(DELTA4_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(DELTA4_VENV)/bin/python -m pip install --quiet -e ".[test-core]" "pyspark==$(DELTA4_SPARK)"
	touch $@

# $(call delta-suite,VENV,JARS_DIR,SELECTION): tests/delta on that venv's pyspark with those jars.
# The Spark 4.2 line leaves out the driver-kill tests (3 spark-submits each of the job's own
# staging and commit), which the 3.5 line runs. CI's subset: on 3.5 a release as one Delta
# commit and the kill half-way through the commit; on 4.2 catalog tables, the same rows' files
# and bad Delta inputs; on both the digest of a pinned version (no pass over its rows).
delta-suite = SPARK_DP_TEST_SUITE=delta \
	SPARK_DP_DELTA_JARS=$$(ls $(abspath $(2))/*.jar | paste -sd, -) \
	PYSPARK_PYTHON=$(abspath $(1)/bin/python) PYSPARK_DRIVER_PYTHON=$(abspath $(1)/bin/python) \
	    $(1)/bin/python -m pytest -q tests/delta $(3) $(ARGS)
DELTA35_K := $(call subset,-k "one_delta_commit or (kill_during and 6) or snapshot")
DELTA4_K  := $(call subset,-k "catalog or same_rows or bad_delta or snapshot",-k "not kill_during")

test-delta: spark35-setup delta-jars delta4-setup ## Delta Lake with the real jars (pyspark 3.5 and 4.2)
	$(call delta-suite,$(SPARK35_VENV),$(DELTA_JARS_DIR),$(DELTA35_K))
	$(call delta-suite,$(DELTA4_VENV),$(DELTA4_JARS_DIR),$(DELTA4_K))

graphframes-jars: ## copy the GraphFrames jars into .cache/jars (SHA-256 checked; once)
	$(PYTHON) .ci/copy-jars $(GRAPHFRAMES_SRC) $(GRAPHFRAMES_JARS_DIR) \
	    $(notdir $(GRAPHFRAMES_JAR4)) $(notdir $(GRAPHFRAMES_JAR35))

# $(call graphframes-suite,VENV,JAR): tests/graphframes on that venv's pyspark with that jar
graphframes-suite = SPARK_DP_TEST_SUITE=graphframes \
	SPARK_DP_GRAPHFRAMES_JAR=$$([ -f $(2) ] && echo $(abspath $(2))) \
	PYSPARK_PYTHON=$(abspath $(1)/bin/python) PYSPARK_DRIVER_PYTHON=$(abspath $(1)/bin/python) \
	    $(1)/bin/python -m pytest -q -rs tests/graphframes $(3) $(ARGS)

# CI's subset: on pyspark 4 GraphFrames' own calls, the job on the collisions shape and the
# neighbour test; on 3.5 GraphFrames' own calls (the session, each algorithm on every shape,
# the checkpoint directory). The job-level code is the same on both lines.
GRAPHFRAMES4_K  := $(call subset,-k "session_runs or each_algorithm or collisions or no_artefact")
GRAPHFRAMES35_K := $(call subset,-k "session_runs or each_algorithm or checkpoint")

test-graphframes: setup spark35-setup graphframes-jars ## GraphFrames' components for real (pyspark 4 and 3.5)
	$(call graphframes-suite,$(VENV),$(GRAPHFRAMES_JAR4),$(GRAPHFRAMES4_K))
	$(call graphframes-suite,$(SPARK35_VENV),$(GRAPHFRAMES_JAR35),$(GRAPHFRAMES35_K))

pythons-setup: ## a venv per Python of PY_VERSIONS found on this machine (the test-core extra)
	@for v in $(PY_VERSIONS); do \
	    py=$$(.ci/find-python $$v); \
	    [ -n "$$py" ] && [ ! -f .venv-py$$v/.installed ] || continue; \
	    { $$py -m venv .venv-py$$v && \
	        .venv-py$$v/bin/python -m pip install --quiet --upgrade pip && \
	        .venv-py$$v/bin/python -m pip install --quiet -e ".[test-core]" -e selftest && \
	        touch .venv-py$$v/.installed; } || exit 1; \
	done

test-pythons: pythons-setup ## the driver-side tests on each Python of PY_VERSIONS found on this machine
	@for v in $(PY_VERSIONS); do \
	    py=$$(.ci/find-python $$v); \
	    if [ -z "$$py" ]; then echo "note: no Python $$v on this machine: its run is left out"; continue; fi; \
	    echo "== Python $$v ($$py)"; \
	    SPARK_DP_DRIVER_ONLY=1 .venv-py$$v/bin/python -m pytest -q -m "not slow and not main_python" \
	        $(PY_TESTS) || exit 1; \
	done

# Every venv and jar the compatibility suites need (.ci/run builds them beside `make test`).
compat-setup: spark35-setup delta-jars delta4-setup graphframes-jars pythons-setup ## every venv and jar of the compatibility suites

test-compat: test-spark35 test-delta test-graphframes test-pythons ## pyspark 3.5, Delta, GraphFrames, other Pythons (CI: after test)

lint: setup ## ruff, ruff format check, mypy, the configuration reference and the strict docs build
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy
	$(PY) -m spark_dp.jobs.reference --check docs/reference/configuration.md
	$(PY) -m mkdocs build --strict --quiet

docs: setup ## regenerate the configuration reference and build the site into site/ (mkdocs)
	$(PY) -m spark_dp.jobs.reference --write docs/reference/configuration.md
	$(PY) -m mkdocs build --strict

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
	    --report $(DEMO)/distinct_count.json --overwrite
	$(PY) jobs/contribution_bounding.py --input $(DEMO)/graph --output $(DEMO)/bounded \
	    --max-contributions 4 --driver-threshold-rows 20000 --overwrite
	@echo "demo done: reports in $(DEMO)/*.json (noise from OS entropy: numbers differ per run)"

bench-setup: $(VENV)/.bench-installed

$(VENV)/.bench-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $@

# One harness run per family (each with its baseline and peers measured in the same run), so
# a long family never loses another's table; results in bench/results/<family>/.
bench: setup bench-setup bench-scale bench-lines ## full benchmark, over 3 h (bench/results/*/)
	$(PY) -m bench --scale full --only partition_selection/ --only peer/pipeline-dp \
	    --out bench/results/partition_selection $(ARGS)
	$(PY) -m bench --scale full --only distinct_count/ --only peer/knop \
	    --out bench/results/distinct_count $(ARGS)
	$(PY) -m bench --scale full --only contribution_bounding/ \
	    --out bench/results/contribution_bounding $(ARGS)
	$(PY) -m bench --scale full --only tuning/ --out bench/results/tuning $(ARGS)
	$(PY) -m bench.tuning_report bench/results/tuning

# Floor C, Basic and MAD2R at 13M and 104M pairs on Spark 4 and 3.5, with each job's stage
# seconds and the load; compared with the previous run (bench/results/scale/results.md).
bench-scale: setup bench-setup ## speed at scale: floor C, Basic, MAD2R (bench/results/scale/)
	$(PY) -m bench.scale $(ARGS)

# The Spark-lines suite: each job a fresh process, Spark 3.5 and 4 (venvs under .venv-bench/, made by
# the bench), floors A and B beside every case, PipelineDP and Tumult in the same run.
# SCALE=full: 13M pairs; SCALE=xl: 104M pairs (times: bench/results/lines/).
SCALE ?= full
bench-lines: setup bench-setup ## Spark 3.5 + 4, floors and peers (bench/results/lines/results-$(SCALE).md)
	$(PY) -m bench.lines --scale $(SCALE) $(ARGS)

# Connected components of the peeled core (1M, 5M, 20M edges at SCALE=full) by the
# DataFrame path and GraphFrames' two_phase and graphx, and the whole distinct-count job, on
# Spark 4 and 3.5 (bench/results/components/results-$(SCALE).md). Run it on an idle machine.
bench-components: setup spark35-setup graphframes-jars ## GraphFrames vs DataFrame components (SCALE=quick|full)
	$(PY) -m bench.components --scale $(SCALE) $(ARGS)

bench-quick: setup bench-setup ## a small benchmark run for a smoke check
	$(PY) -m bench --scale quick $(ARGS)

# Fresh keys each run (no seed): the table is one random audit, as a user would run it.
audit: setup ## privacy audit of every mechanism and broken variant (docs/privacy/)
	$(PY) -m spark_dp audit --self-test --json docs/privacy/audit.json \
	    --markdown docs/privacy/audit-results.md --plot docs/privacy/audit.png $(ARGS)

# MAD2R and the exact distinct count at revision BEFORE and at this tree,
# alternating REPEAT times in one invocation (bench/results/compare/compare.md), then the
# keyed noise step alone against Spark's randn (noise-cost.md).
BEFORE ?= e9f5fc2
REPEAT ?= 3
bench-compare: setup bench-setup ## MAD2R and distinct count: BEFORE=<rev> vs this tree, one run
	$(PY) -m bench.compare --before $(BEFORE) --repeat $(REPEAT) \
	    --only partition_selection/mad2r/zipf-5m --only distinct_count/exact-zipf-1m $(ARGS)
	$(PY) -m bench.noise_cost

package: ## build the wheel and dist/spark_dp.zip (--py-files) with the system Python, no venv
	$(PYTHON) -m pip wheel --quiet --no-deps --wheel-dir dist .
	rm -rf build
	$(PYTHON) -m spark_dp.packaging dist/spark_dp.zip

clean: ## remove build artifacts, caches and demo output
	rm -rf dist build *.egg-info .pytest_cache .ruff_cache .hypothesis spark-warehouse \
	       $(DEMO) bench/work site
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
