# vigil: `make demo` runs the whole stack, `make test` runs every test. Both set everything up first.
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# victoria-metrics: the long-term store of `vigil up --profile ha` (docs/scaling.md)
DEB_PACKAGES := prometheus prometheus-alertmanager prometheus-node-exporter smartmontools python3-venv libpango-1.0-0 libpangoft2-1.0-0 victoria-metrics
# the notifier's store is tested against a real PostgreSQL server too; the web console's browser tests
# drive Debian's chromium through Playwright (never a browser Playwright downloads)
DEB_TEST_PACKAGES := postgresql chromium systemd
# postgres: psycopg for the PostgreSQL store; k8s: grpcio for the kubelet pod-resources source;
# parquet: pyarrow for Parquet history files (the tests read and write them)
EXTRAS := test,postgres,k8s,parquet
# test files run on this many pytest-xdist workers, each file whole on one worker (its module fixtures
# start one stack), the longest files first (tests/module_seconds.json); most of a run waits on real
# servers, so three workers fit two cores (2: 883 s, 3: 751 s for the first phase on 2026-12-07)
TEST_WORKERS ?= 3
# Tests that simulate time take their "now" from tests/sim_clock.py (a fixed instant); VIGIL_TEST_NOW
# moves it. `make test` runs those tests again on a Sunday morning (the weekend case that once failed);
# `make test-any-day` at each instant below, with the TZ of a host there (NOW@TZ): a Saturday, a Sunday,
# the last 30 s of a year, and the nights of the daylight-saving changes in Berlin and New York
WEEKEND_NOW := 2026-12-06T06:30:00Z
SIM_NOW_TESTS := $(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile -m sim_now -p no:cacheprovider
ANY_DAY_NOWS := 2026-12-05T12:00:00Z@UTC 2026-12-06T06:30:00Z@UTC 2026-12-31T23:59:30Z@UTC \
	2027-03-28T01:00:00Z@Europe/Berlin 2026-10-25T01:00:00Z@Europe/Berlin \
	2027-03-14T07:00:00Z@America/New_York 2026-11-01T06:00:00Z@America/New_York

.PHONY: demo test test-any-day setup system-packages rules bench-exporters bench-aiops clean

demo: setup
	$(VENV)/bin/vigil up

test: setup
	@deploy/ensure-system-packages.sh $(DEB_TEST_PACKAGES)
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile
	VIGIL_TEST_NOW=$(WEEKEND_NOW) $(SIM_NOW_TESTS)

test-any-day: setup
	@deploy/ensure-system-packages.sh $(DEB_TEST_PACKAGES)
	@set -e; for at in $(ANY_DAY_NOWS); do \
		echo "== simulated now $${at%@*}, TZ=$${at#*@}"; \
		VIGIL_TEST_NOW=$${at%@*} TZ=$${at#*@} $(SIM_NOW_TESTS); \
	done

setup: system-packages $(STAMP)

system-packages:
	@deploy/ensure-system-packages.sh $(DEB_PACKAGES)

# the runtime dependencies install at the versions pinned for the container images
# (deploy/images/constraints.txt), so the tests run what the images ship and a new release upstream
# cannot change a run between two clones
$(STAMP): pyproject.toml Makefile deploy/images/constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[$(EXTRAS)]' --constraint deploy/images/constraints.txt
	touch $(STAMP)

rules: setup
	$(VENV)/bin/vigil rules check

bench-exporters: setup
	$(VPY) bench/exporters/run.py

bench-aiops: setup
	$(VPY) -m pip install --quiet -e '.[bench]'
	$(VPY) bench/aiops/baselines.py
	$(VPY) bench/aiops/detect.py

clean:
	rm -rf $(VENV) .vigil .pytest_cache
