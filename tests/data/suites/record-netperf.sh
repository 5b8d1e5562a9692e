#!/usr/bin/env bash
# Record the netperf captures that tests/unit/test_suite_parsers.py reads (netperf 2.7.0,
# Debian's package), with the commands kbench.suites builds (short runtime). A private
# netserver is started on 127.0.0.1:12867 and stopped afterwards. Kept apart from
# record.sh so that re-recording netperf does not change the other captures.
set -uo pipefail
cd "$(dirname "$0")"
export LC_ALL=C
port=12867

capture() {  # capture NAME COMMAND...
  local name=$1
  shift
  "$@" >"$name.stdout" 2>"$name.stderr"
  echo $? >"$name.rc"
  echo "recorded $name (exit $(cat "$name.rc"))"
}

fields=THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,ELAPSED_TIME,PROTOCOL
netserver -D -4 -L 127.0.0.1 -p $port </dev/null >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 0.5
capture netperf-TCP_RR netperf -4 -H 127.0.0.1 -p $port -t TCP_RR -l 1 -- -r 1,1 -o $fields
capture netperf-UDP_RR netperf -4 -H 127.0.0.1 -p $port -t UDP_RR -l 1 -- -r 1,1 -o $fields
capture netperf-TCP_STREAM netperf -4 -H 127.0.0.1 -p $port -t TCP_STREAM -l 1 -- -m 16384 -o $fields
kill $server
wait $server 2>/dev/null
# failure: nothing listens on the port
capture netperf-no-server netperf -4 -H 127.0.0.1 -p $port -t TCP_RR -l 1 -- -r 1,1 -o $fields
netperf -V >>versions.txt
