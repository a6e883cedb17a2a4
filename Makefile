# Skiplock: `make run` serves on http://127.0.0.1:8080, `make test` runs the whole suite. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install run worker test test-citus test-fast drills fuzz lint format proto bench bench-citus bench-console bench-versus bench-lease explain clean ui ui-dev ui-check ui-e2e ui-screenshots deploy-check loadtest loadtest-load loadtest-spike loadtest-soak loadtest-fairness loadtest-stress loadtest-wakeup loadtest-fanout loadtest-grpc

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml client/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,embedded]' -e './client[spark]'
	@touch $(STAMP)

# The admin console's build, remade when any of its sources (or the OpenAPI document it is typed from) is newer.
UI_BUILD := admin-ui/dist/index.html
UI_SOURCES := $(shell find admin-ui/src admin-ui/index.html admin-ui/package.json admin-ui/package-lock.json \
	admin-ui/vite.config.ts admin-ui/tsconfig.json docs/openapi.json -type f -not -name schema.ts 2>/dev/null)

install: $(STAMP) ## Create .venv and install Skiplock with its dev tools

# The deployment checks' tools (helm, checkov, kubernetes-validate, docker-compose), in a virtualenv of their own.
DEPLOY_TOOLS := $(VENV)/deploy-tools
$(DEPLOY_TOOLS)/.installed: helm/tools.sh | $(STAMP)
	PYTHON=$(PYTHON) bash helm/tools.sh $(DEPLOY_TOOLS)

run: $(STAMP) $(UI_BUILD) ## Serve Skiplock and its admin console at / (embedded Postgres and Redis unless URLs are set)
	SKIPLOCK_MIGRATE_ON_START=$${SKIPLOCK_MIGRATE_ON_START:-true} $(BIN)/python -m skiplock serve

$(UI_BUILD): $(UI_SOURCES) | $(STAMP)
	bash admin-ui/build.sh

ui: $(UI_BUILD) ## Build the admin console (admin-ui/dist), which `make run` serves at /

ui-dev: ## Vite's dev server for the admin console, proxying /api to a running server (SKIPLOCK_URL, default :8080)
	cd admin-ui && npm install --no-audit --no-fund --loglevel=error && npm run dev

ui-check: ## The admin console's type check, lint (Biome) and component tests (vitest)
	cd admin-ui && npm install --no-audit --no-fund --loglevel=error && npm run --silent check && npm test

ui-e2e: ## The console's Playwright specs in the system Chromium against a running server (SKIPLOCK_URL, default :8080)
	cd admin-ui && npm install --no-audit --no-fund --loglevel=error && npx playwright test

ui-screenshots: $(STAMP) ## Refresh docs/images/console-*.png: the browser tests on a fresh server, saving screenshots
	SKIPLOCK_SCREENSHOTS=$(CURDIR)/docs/images $(BIN)/pytest -q tests/e2e/test_admin_ui.py -k chromium

worker: $(STAMP) ## Run the scheduled jobs alone (needs SKIPLOCK_DATABASE_URL; `make run` runs them itself)
	$(BIN)/python -m skiplock worker

# The suite runs as TEST_WORKERS sessions side by side (pytest-xdist), each with servers of its own, a test file
# whole in one session (one Spark session, one browser); most of a test's time is waiting on its servers, so two
# sessions on 2 cores take 14 minutes where one took 21. The k6 tests hold latency thresholds: they run alone after.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile

test: $(STAMP) $(DEPLOY_TOOLS)/.installed ## Run the whole test suite against real Postgres and Redis
	$(BIN)/python -m pytest $(XDIST) --durations=0 --durations-min=3 --ignore=tests/loadtests
	$(BIN)/python -m pytest --durations=0 --durations-min=3 tests/loadtests

# A 3-node Citus cluster (a coordinator on 9700, workers on 9701 and 9702) from ../shared/citus, for `test-citus`.
CITUS_DIR := $(abspath ../shared/citus)
CITUS_URL := postgresql://postgres@127.0.0.1:9700/postgres
# What runs on Citus in CI (docs/scale-out.md, "Testing on a cluster"): the distribution and routing checks, and the
# suites whose statements differ there or race on them: the data plane, consumer groups and their healing jobs,
# concurrency limits, the workers, the operators' actions, both Hypothesis models and the racing producers and
# consumers. The rest passes there too, run by hand: `make test-citus CITUS_TESTS="tests/integration tests/client \
# tests/compat tests/fuzz tests/spark"`.
CITUS_TESTS ?= tests/integration/test_citus.py tests/integration/test_enqueue.py tests/integration/test_consume.py \
	tests/integration/test_migrations.py tests/integration/test_schedules.py tests/integration/test_functions.py \
	tests/integration/test_consumer_groups.py tests/integration/test_healing_jobs.py \
	tests/integration/test_inflight.py tests/integration/test_workers.py tests/integration/test_audit.py \
	tests/integration/test_console.py tests/integration/test_concurrency.py \
	tests/integration/test_lifecycle_model.py tests/integration/test_group_lifecycle_model.py \
	tests/integration/test_message_story.py

test-citus: $(STAMP) ## The tests that run on a real Citus cluster (started from ../shared/citus; needs root once, to install it)
	bash $(CITUS_DIR)/install.sh
	bash $(CITUS_DIR)/cluster.sh start
	SKIPLOCK_TEST_DATABASE_URL=$(CITUS_URL) $(BIN)/python -m pytest $(XDIST) -p no:cacheprovider $(CITUS_TESTS)

test-fast: $(STAMP) ## Unit tests only (no servers)
	$(BIN)/python -m pytest tests/unit

drills: $(STAMP) ## The long reliability drills (kill -9, Postgres restart, Redis loss, ...); prints their figures
	SKIPLOCK_DRILL_LONG=1 $(BIN)/python -m pytest tests/drills -s -p no:cacheprovider -q --timeout=3600

fuzz: $(STAMP) ## The recorded fuzzing run: OpenAPI (schemathesis, as two roles) and queue-ti's gRPC messages (Hypothesis)
	SKIPLOCK_FUZZ_EXAMPLES=400 SKIPLOCK_GRPC_FUZZ_EXAMPLES=3000 $(BIN)/python -m pytest tests/fuzz \
		tests/integration/test_grpc.py::test_no_request_is_answered_internal -s -p no:cacheprovider -q \
		--timeout=3600 --hypothesis-show-statistics

deploy-check: $(STAMP) $(DEPLOY_TOOLS)/.installed ## Chart, compose file and Dockerfile: helm lint, kubernetes-validate, checkov, compose config, chart tests
	DEPLOY_TOOLS=$(DEPLOY_TOOLS) bash helm/deploy-check.sh
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/deploy -m "not slow"

lint: $(STAMP) openapi-client ## ruff, mypy (strict), the import-layering contracts, the generated TypeScript client, Biome on loadtests/
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	cd admin-ui && npm install --no-audit --no-fund --loglevel=error  # Biome, for the k6 scripts
	cd loadtests && ../admin-ui/node_modules/.bin/biome check .

openapi: $(STAMP) ## Write the OpenAPI document to docs/openapi.json (the reviewed snapshot a test compares)
	$(BIN)/python -m tests.openapi.snapshot

openapi-client: ## Generate TypeScript types from docs/openapi.json and type-check a client written against them
	cd tests/openapi/client && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check

format: $(STAMP) ## Apply ruff's formatting and safe fixes
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# k6 load tests (loadtests/): against SKIPLOCK_URL, or a server started like `make run` and stopped afterwards.
# Knobs pass through the environment (RATE=, DURATION=, MODE=single|batch, ...: see each script's header).
loadtest: $(STAMP) ## k6 smoke: every path for seconds at a low rate, SLOs as thresholds (what CI runs)
	$(BIN)/python loadtests/run.py smoke

loadtest-load: $(STAMP) ## k6 load: constant arrival rate of producers and consumers (RATE=500 MODE=single DURATION=60s)
	$(BIN)/python loadtests/run.py load

loadtest-spike: $(STAMP) ## k6 spike: 10x the rate for 20 s, then back; recovery within 30 s, nothing lost
	$(BIN)/python loadtests/run.py spike

loadtest-soak: $(STAMP) ## k6 soak: 30 minutes at 500 msg/s; first and last 5 minutes compared, tables and memory recorded
	$(BIN)/python loadtests/run.py soak

loadtest-fairness: $(STAMP) ## k6 fairness: tenant A floods while tenant B runs 50 msg/s; B within 2x of alone
	$(BIN)/python loadtests/run.py fairness

loadtest-wakeup: $(STAMP) ## k6 long-poll wake-up latency, with WAITERS idle long polls on topics of their own
	$(BIN)/python loadtests/run.py wakeup

loadtest-fanout: $(STAMP) ## k6 fan-out: one topic, GROUPS=3 consumer groups each receiving every message (RATE=100)
	$(BIN)/python loadtests/run.py fanout

loadtest-grpc: $(STAMP) ## k6 gRPC: queue-ti's service, Enqueue with metadata, BatchDequeue/Dequeue + Ack (RATE=50 DURATION=20s)
	$(BIN)/python loadtests/run.py grpc

loadtest-stress: $(STAMP) ## k6 stress: the rate steps up until an SLO breaks; reports the highest rate that held
	$(BIN)/python loadtests/run.py stress

proto: $(STAMP) ## Regenerate queue-ti's gRPC modules (api/queue_ti) from queue.proto
	$(BIN)/python -m api.queue_ti.generate

bench: $(STAMP) ## Throughput and latency, HTTP API against raw SQL on the same Postgres (writes bench/out/)
	$(BIN)/python -m bench.run

bench-console: $(STAMP) $(UI_BUILD) ## The admin console at scale: 500-topic overview in Chromium, pages of a 1,000,000-message topic
	$(BIN)/python -m bench.console

bench-citus: $(STAMP) ## Skiplock on the Citus cluster beside one Postgres of the same settings: msg/s, CPU and transactions per node
	bash $(CITUS_DIR)/install.sh
	bash $(CITUS_DIR)/cluster.sh start
	bash $(CITUS_DIR)/cluster.sh plain-start
	$(BIN)/python -m bench.citus

bench-lease: $(STAMP) ## Postgres' CPU per message of dequeue + ack, the statements alone on one connection, beside the raw loop
	$(BIN)/python -m bench.lease

bench-versus: $(STAMP) ## Single enqueues against the server at REV=<commit>, head to head on one database
	$(BIN)/python -m bench.versus

explain: $(STAMP) ## EXPLAIN (ANALYZE, BUFFERS) of the hot statements on a table of 1,000,000 messages
	$(BIN)/python -m bench.explain

clean: ## Remove the virtualenv, caches and the local data folder
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .skiplock
