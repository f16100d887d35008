# One entry point: `make run` starts MemoryHub, `make test` runs every test.
# Both set up what they need on a fresh machine (virtualenv, packages, Chromium for browser tests).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run dev test lint bench load-bench chromium clean-db

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

run: $(STAMP)
	$(PY) manage.py serve

# The same, with Django's development server reloading on code changes.
dev: $(STAMP)
	$(PY) manage.py serve --dev

chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { echo "Installing Chromium for the browser tests..."; \
	    if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	    else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi; }

# The second run: the same tests of the API, services, portability, curation and the vector-index tiers on a
# database whose bank tables are hash-partitioned by bank_id (docs/scaling.md, "The partitioned install").
PARTITIONED_TESTS := tests/banks/api tests/banks/services tests/portability tests/curation \
	tests/banks/test_bank_partitions.py tests/banks/test_bank_vector_index.py tests/banks/test_tag_indexes.py \
	tests/banks/test_recall_indexes.py tests/banks/test_bank_keys.py
# Each deselected test is listed with its reason in docs/scaling.md. The tests that start a real Celery
# worker (-m worker: kills, resumes, cancels across processes) are left to the first run: the statements
# their jobs send are the ones the same jobs send when run in-process, which this run covers.
PARTITIONED_DESELECT := \
	--deselect tests/banks/test_bank_vector_index.py::test_recall_walks_a_banks_own_index_wider_than_the_shared_one

# Two pytest-xdist workers, each on a database of its own (a module's tests stay together, in order, on
# one worker); PYTEST_WORKERS=0 runs in this process alone.
PYTEST_WORKERS ?= 2
PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile

# Bytecode caches on, even where the environment turns them off (PYTHONDONTWRITEBYTECODE): otherwise
# every worker and every process a test starts compiles the project, and pytest rewrites the asserts of
# every test module again (20 s of a worker's collection instead of 9 here).
# mypy (40 s of one core on a fresh clone) runs beside the first run, whose workers leave a core idle
# while they wait on the servers and workers they start; its report follows that run's, and either
# failing fails the target.
test: export PYTHONDONTWRITEBYTECODE =
test: $(STAMP) chromium
	@mkdir -p var
	$(VENV)/bin/mypy > var/mypy.out 2>&1 & mypy=$$!; \
	$(PY) -m pytest $(PARALLEL) $(PYTEST_ARGS); tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat var/mypy.out; [ $$tests = 0 ] && [ $$typed = 0 ]
	MEMORYHUB_BANK_PARTITIONS=4 $(PY) -m pytest $(PARALLEL) $(PARTITIONED_TESTS) $(PARTITIONED_DESELECT) -m "not browser and not worker"

# Benchmarks print figures; they never fail on time. 1M: `make bench BENCH_MEMORIES=1000000`.
# Import/export beside PostgreSQL's own COPY and index build, recall over HTTP on the imported bank and
# on the same number of memories spread over BENCH_BANKS skewed banks, then the operator pages.
BENCH_MEMORIES ?= 100000
BENCH_BANKS ?= 10000
bench: $(STAMP)
	$(PY) bench/portability_bench.py --memories $(BENCH_MEMORIES)
	$(PY) bench/recall_http_bench.py --bank import-bench-$(BENCH_MEMORIES)
	$(PY) bench/recall_http_bench.py --memories $(BENCH_MEMORIES) --banks $(BENCH_BANKS) --bulk-shared-graph
	$(PY) bench/duplicates_bench.py --bank import-bench-$(BENCH_MEMORIES)
	$(PY) bench/curation_bench.py --bank import-bench-$(BENCH_MEMORIES)

# The migration linter checks only migrations newer than its baseline (pyproject.toml, docs/operations.md).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	DJANGO_SETTINGS_MODULE=config.settings_test $(PY) manage.py lintmigrations

clean-db:
	rm -rf var/
