# animat: set-up and the main jobs. Every target creates .venv on first use.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
WEB := src/animat/viz/web
THREE := $(WEB)/node_modules/three/package.json

.PHONY: setup run test test-all bench clean browser lint

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,distributed,imitate,rl]'
	@touch $(STAMP)

# three.js for report.html's 3D replay, from the npm registry (pinned in $(WEB)/package.json); without npm
# the reports are written without their replay.
$(THREE): $(WEB)/package.json
	@if command -v npm >/dev/null 2>&1; then \
		(cd $(WEB) && npm install --no-audit --no-fund --no-package-lock --loglevel=error) && touch $(THREE) \
		|| echo "npm install failed: report.html is written without its 3D replay"; \
	else echo "npm not found: report.html is written without its 3D replay"; fi

# Debian's Chromium for the browser tests: installed where we run as root, else those tests are skipped.
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
			|| echo "could not install chromium: the browser tests will be skipped"; \
		else echo "chromium not found (and not root to install it): the browser tests will be skipped"; fi; }

setup: $(STAMP) $(THREE)

run: $(STAMP) $(THREE)
	$(VENV)/bin/animat fly train --config configs/fly_default.toml

# ruff (pyproject.toml [tool.ruff]): lint and formatting of src, tests and benchmarks
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

# two pytest workers (pytest-xdist), one test file each at a time: a file's module fixtures (compiled rollouts,
# trained tiny runs) are built once; 2 cores: 12.3 min against 16.7 min in one process (2026-12-06); 1 021 tests in
# 12.1 min on a fresh clone with JAX's compilation cache shared by the workers (tests/conftest.py; 2026-12-07)
test: $(STAMP) $(THREE) browser
	$(PY) -m pytest -m "not slow" -q -n 2 --dist loadfile --durations=20

test-all: $(STAMP) $(THREE) browser
	$(PY) -m pytest -q -n 2 --dist loadfile

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache $(WEB)/node_modules
