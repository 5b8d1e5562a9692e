# Thin entry points; the logic lives in src/kbench, native/, kmod/ and scripts/.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PYTEST_ARGS ?=

.PHONY: setup deps deps-run venv install install-test demo test test-all bench native dist dist-check clean

## setup: what running kbench needs (Debian packages, kbench into .venv), then a first measurement
setup: deps-run install demo

## deps: the Debian packages of kbench, its tests and benchmarks (make test, CI)
deps:
	scripts/install-deps.sh --test

## deps-run: only what running kbench needs
deps-run:
	scripts/install-deps.sh

venv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

## install: kbench, its dashboard and its static plots into .venv (no test tools)
install: venv
	$(BIN)/pip install --quiet -e '.[web,plots]'

## install-test: the test tools and every optional part the tests cover (make test does it)
install-test: deps venv
	$(BIN)/pip install --quiet -e '.[test]'

demo:
	$(BIN)/kbench run syscall.getppid --samples 20000

## test: the suite CI runs (everything but the long soak tests); installs what the tests need first
test: install-test
	$(BIN)/python -m pytest -m 'not soak' --durations=30 $(PYTEST_ARGS)

test-all: install-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install-test
	$(BIN)/python benchmarks/run_all.py

# Rebuild the native tools into the venv after editing native/ (editable installs
# build them once, at install time); the extras already installed stay.
native:
	$(BIN)/pip install --quiet --no-deps -e .

## dist: the sdist and a manylinux wheel in dist/ (the wheel built from the sdist; docs/packaging.md)
dist:
	PYTHON=$(PYTHON) scripts/dist.sh

## dist-check: the wheel installed alone in a new venv outside the tree: it measures, a missing extra is one line, the core's size
dist-check: dist
	PYTHON=$(PYTHON) scripts/dist-check.sh

clean:
	rm -rf build dist .pytest_cache
