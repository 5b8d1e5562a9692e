#!/usr/bin/env bash
# Install benchstat (golang.org/x/perf/cmd/benchstat) for the Go-benchmark export test.
# Idempotent. Installs into $KBENCH_TOOLS_BIN (default ~/.cache/kbench/bin), where the
# tests look for it. Needs Go >= 1.21: older Go cannot fetch the newer toolchain that
# x/perf asks for (GOTOOLCHAIN=auto downloads it through the Go module proxy).
set -euo pipefail

bin_dir="${KBENCH_TOOLS_BIN:-$HOME/.cache/kbench/bin}"
if [ -x "$bin_dir/benchstat" ]; then
  echo "install-benchstat: $bin_dir/benchstat present"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  SUDO=
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  echo "install-benchstat: no Go toolchain; installing Debian's golang-go"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go
fi

version="$(go env GOVERSION 2>/dev/null || go version | awk '{print $3}')"
minor="$(printf '%s\n' "$version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
  echo "install-benchstat: WARNING: $version cannot build benchstat (needs Go >= 1.21);" \
       "install a newer Go from https://go.dev/dl/ - the benchstat test will be skipped" >&2
  exit 0
fi

mkdir -p "$bin_dir"
echo "install-benchstat: go install golang.org/x/perf/cmd/benchstat@latest -> $bin_dir"
GOTOOLCHAIN=auto GOBIN="$bin_dir" GOFLAGS=-mod=mod go install golang.org/x/perf/cmd/benchstat@latest
