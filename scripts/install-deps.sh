#!/usr/bin/env bash
# Install the Debian packages kbench needs (idempotent; apt-get update only when needed).
#   scripts/install-deps.sh          what running kbench needs
#   scripts/install-deps.sh --test   that, plus what its tests and benchmarks need (make deps, CI)
set -euo pipefail

with_tests=0
case "${1:-}" in
  --test) with_tests=1 ;;
  "") ;;
  *) echo "usage: $0 [--test]" >&2; exit 2 ;;
esac

packages=(
  build-essential cmake ninja-build pkg-config   # native probe and guest agent
  python3 python3-venv python3-dev               # the kbench package
  qemu-system-x86 busybox-static cpio            # VM target: boot Debian kernels in qemu
  kmod bc flex bison libelf-dev libssl-dev       # building kbench.ko against kernel headers
  zstd dwarves                                   # Debian 6.12 kernels: zstd images, BTF for modules
  stress-ng rt-tests fio sysbench                # standard suites (kbench.suites); rt-tests has hackbench
  netperf                                        # the netperf suite (netperf + netserver; Debian's non-free component)
  linux-perf                                     # the perf-bench suite (perf bench sched pipe, futex hash)
  valgrind                                       # --metric instructions without a PMU; its header for kbench-probe --mark
  fsmark pigz                                    # LKP's fsmark (fs_mark) and pigz test cases
  mdadm xfsprogs btrfs-progs f2fs-tools          # LKP's disk set-up in a guest (md:, fs: xfs|btrfs|f2fs)
  iproute2                                       # kbench fleet demo --isolated: namespaces, veths, a bridge
)
test_packages=(
  linux-source-6.1                               # scripts/checkpatch.pl judges kbench.ko's style
  hyperfine                                      # kbench import/export of its JSON; benchmarks/sensitivity.py
  chromium fonts-dejavu-core                     # headless screenshots of the HTML reports; the dashboard tests (Playwright)
  postgresql redis-server                        # a shared store and the fleet's broker, started by the tests
)
if [ "$with_tests" -eq 1 ]; then
  packages+=("${test_packages[@]}")
fi

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
install_benchstat() {  # the Go benchmark format's tests compare with the real benchstat
  if [ "$with_tests" -eq 1 ]; then
    "$(dirname "$0")/install-benchstat.sh"
  fi
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
  install_benchstat
  exit 0
fi

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# netperf is in Debian's non-free component (its licence), which a default Debian image
# does not list: add that component for this release, from the mirror it already uses.
enable_non_free() {
  local list=/etc/apt/sources.list.d/kbench-non-free.sources codename mirror
  [ -e "$list" ] && return 0
  grep -rqsE '^(Components:|deb ).*non-free( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ && return 0
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || return 0
  mirror=$(grep -hsoE '^URIs: *http[^ ]*/debian/?$' /etc/apt/sources.list.d/*.sources | head -1 | sed 's/^URIs: *//')
  mirror=${mirror:-http://deb.debian.org/debian}
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\nSigned-By: %s\n' \
    "$mirror" "$codename" /usr/share/keyrings/debian-archive-keyring.gpg | $SUDO tee "$list" >/dev/null
  echo "install-deps: enabled Debian's non-free component for netperf ($list)"
}
if [[ " ${missing[*]} " == *" netperf "* ]]; then
  enable_non_free
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_benchstat
