#!/usr/bin/env bash
# Re-record the real tool outputs that tests/unit/test_suite_parsers.py reads.
# Each capture NAME keeps the tool's stdout in NAME.stdout, its stderr in NAME.stderr
# and its exit status in NAME.rc. The commands are those kbench.suites builds (short
# settings), plus a multi-stressor stress-ng run and deliberate failures. Numbers
# differ on every recording: the unit tests hard-code the values of THESE files, so
# update them together.
set -uo pipefail
cd "$(dirname "$0")"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export LC_ALL=C

capture() {  # capture NAME COMMAND...
  local name=$1
  shift
  (cd "$scratch" && "$@") >"$name.stdout" 2>"$name.stderr"
  echo $? >"$name.rc"
  echo "recorded $name (exit $(cat "$name.rc"))"
}

capture hackbench-pipe-process hackbench -g 2 -f 10 -l 200 -s 100 -p -P
capture hackbench-socket-thread hackbench -g 2 -f 10 -l 200 -s 100 -T
# failure: 2 groups × 2×20 fds do not fit in 20 open files
capture hackbench-fds-exhausted bash -c 'ulimit -n 20 && exec hackbench -g 2 -f 20 -l 10 -s 100 -P'

capture stress-ng-cpu stress-ng --cpu 2 --timeout 1s --metrics-brief --yaml /dev/stdout
capture stress-ng-three-stressors stress-ng --cpu 2 --switch 1 --pipe 1 --timeout 1s --metrics-brief --yaml /dev/stdout
# failure: the stressor is unsupported here; stress-ng still exits 0 and reports nothing
capture stress-ng-unsupported stress-ng --apparmor 1 --timeout 1s --metrics-brief --yaml /dev/stdout

fio_common=(--ioengine=psync --runtime=1 --time_based --direct=0 --group_reporting --unlink=1 --output-format=json)
capture fio-randread fio --name=randread --rw=randread --bs=4k --size=8M --iodepth=1 --numjobs=1 "${fio_common[@]}"
# two jobs reported as one; iodepth 4 with a synchronous engine makes fio print notes before the JSON
capture fio-randwrite-2jobs fio --name=randwrite --rw=randwrite --bs=4k --size=8M --iodepth=4 --numjobs=2 "${fio_common[@]}"
capture fio-read fio --name=read --rw=read --bs=64k --size=8M --iodepth=1 --numjobs=1 "${fio_common[@]}"
# failure: the directory does not exist
capture fio-missing-directory fio --name=write --rw=write --bs=4k --size=8M --iodepth=1 --numjobs=1 \
  "${fio_common[@]}" --directory=/nonexistent/kbench

capture sysbench-cpu sysbench cpu --threads=1 --time=1 --cpu-max-prime=10000 run
capture sysbench-memory-2threads sysbench memory --threads=2 --time=1 --memory-block-size=1K \
  --memory-total-size=100G --memory-oper=write --memory-access-mode=seq run
capture sysbench-threads-4threads sysbench threads --threads=4 --time=1 --thread-yields=1000 --thread-locks=8 run
# failure: an option sysbench does not know
capture sysbench-bad-option sysbench cpu --threads=1 --time=1 --cpu-max-primes=10 run

# fs_mark writes its directories and fs_log.txt where it runs: a scratch directory
scratch=$(mktemp -d)
(cd "$scratch" && fs_mark -d 1 -d 2 -D 4 -N 16 -n 64 -L 1 -S 1 -s 4096) >fsmark-fsyncBeforeClose.stdout \
  2>fsmark-fsyncBeforeClose.stderr
echo $? >fsmark-fsyncBeforeClose.rc
rm -rf "$scratch"

{
  hackbench --help 2>&1 | head -1
  stress-ng --version
  fio --version
  sysbench --version
  uname -r
} >versions.txt
