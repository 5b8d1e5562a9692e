# Thin entry points; the logic lives in src/kbench, native/, kmod/ and scripts/.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: setup deps deps-run install demo test test-all bench native clean

## setup: install what a fresh Debian machine lacks, build kbench, take a first measurement
setup: deps install demo

deps:
	scripts/install-deps.sh --test

## deps-run: only what running kbench needs (no test or benchmark tools)
deps-run:
	scripts/install-deps.sh

install:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	# kbench-lab[history] without apache-otava's numpy==2.2.0 pin (pyproject.toml says why)
	$(BIN)/pip install --quiet --no-deps 'apache-otava>=0.8'

demo:
	$(BIN)/kbench run syscall.getppid --samples 20000

## test: the suite CI runs (everything but the long soak tests)
test:
	$(BIN)/python -m pytest -m 'not soak' $(PYTEST_ARGS)

test-all:
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench:
	$(BIN)/python benchmarks/run_all.py

# Rebuild the native tools into the venv after editing native/ (editable installs
# build them once, at install time).
native:
	$(BIN)/pip install --quiet -e '.[test]'

clean:
	rm -rf build .pytest_cache
