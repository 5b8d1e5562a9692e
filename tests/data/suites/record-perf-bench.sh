#!/usr/bin/env bash
# Record the perf bench captures that tests/unit/test_suite_parsers.py reads (perf 6.1.192,
# Debian's linux-perf), with the commands kbench.suites builds (short settings). Kept
# apart from record.sh so that re-recording them does not change the other captures.
set -uo pipefail
cd "$(dirname "$0")"
export LC_ALL=C

capture() {  # capture NAME COMMAND...
  local name=$1
  shift
  "$@" >"$name.stdout" 2>"$name.stderr"
  echo $? >"$name.rc"
  echo "recorded $name (exit $(cat "$name.rc"))"
}

capture perf-bench-sched-pipe perf bench sched pipe -l 20000
capture perf-bench-sched-pipe-threads perf bench sched pipe -l 20000 -T
capture perf-bench-futex-hash perf bench futex hash -r 1 -t 2 -f 1024 -s
# failure: an option perf bench does not know
capture perf-bench-bad-option perf bench sched pipe -l 20000 --no-such-option
perf --version >>versions.txt
