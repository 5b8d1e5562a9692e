#!/usr/bin/env bash
# Check the wheel of dist/ as a user gets it (make dist-check; docs/packaging.md): installed
# alone into a new venv outside the source tree, from the package index's dependencies.
#   - kbench measures there: `kbench run syscall.getppid --samples 2000` (the venv's own probe);
#   - pip check is clean;
#   - a command whose extra is missing (serve without [web]) prints one line naming the pip
#     command and exits 16, no traceback;
#   - the core venv (fresh venv + the wheel, no extra) is at most 320 MB (du -sm).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
CORE_LIMIT_MB=320
shopt -s nullglob
wheels=(dist/kbench_lab-*-manylinux*.whl)
[ ${#wheels[@]} -eq 1 ] || { echo "dist-check: expected one manylinux wheel in dist/ (make dist), found ${#wheels[@]}" >&2; exit 1; }
wheel=$(realpath "${wheels[0]}")

started=$(date +%s)
work=$(mktemp -d /tmp/kbench-dist-check.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"   # nothing of the source tree on sys.path, no kbench on PATH
env -u PYTHONPATH "$PYTHON" -m venv venv
env -u PYTHONPATH venv/bin/pip install --quiet --disable-pip-version-check "$wheel"
size=$(du -sm venv | cut -f1)

in_venv() { env -u PYTHONPATH -u VIRTUAL_ENV PATH=/usr/local/bin:/usr/bin:/bin KBENCH_DB="$work/results.db" \
  XDG_CACHE_HOME="$work/cache" "$@"; }
in_venv venv/bin/kbench --version
in_venv venv/bin/kbench run syscall.getppid --samples 2000
in_venv venv/bin/pip check --disable-pip-version-check

set +e
in_venv venv/bin/kbench serve --port 0 >serve.out 2>serve.err
code=$?
set -e
if [ "$code" -ne 16 ] || [ "$(wc -l <serve.err)" -ne 1 ] || [ -s serve.out ] \
   || ! grep -q "pip install 'kbench-lab\[web\]'" serve.err; then
  echo "dist-check: kbench serve without [web] exited $code; it should print one line naming kbench-lab[web] and exit 16:" >&2
  cat serve.out serve.err >&2
  exit 1
fi
echo "kbench serve without [web] (exit $code): $(cat serve.err)"

echo "core venv: ${size} MB (fresh venv + $(basename "$wheel"), du -sm; limit ${CORE_LIMIT_MB} MB)"
[ "$size" -le "$CORE_LIMIT_MB" ] || { echo "dist-check: the core venv is over ${CORE_LIMIT_MB} MB" >&2; exit 1; }
echo "dist-check: passed in $(( $(date +%s) - started )) s"
