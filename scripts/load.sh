#!/usr/bin/env bash
# Workload W7: the http_server example under wrk on loopback, once with
# hashwheel timers and once with tokio::time, side by side.
#
#   apt-get install -y wrk      # once
#   scripts/load.sh             # ~1 minute
#
# Knobs (environment): CONNECTIONS (1000), DURATION (10s), THREADS (2),
# ROUNDS (2: hashwheel, tokio, hashwheel, tokio, ...), WARMUP (2s),
# PORT (18080). Everything stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=${CONNECTIONS:-1000}
DURATION=${DURATION:-10s}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
WARMUP=${WARMUP:-2s}
PORT=${PORT:-18080}
URL_PATH=${URL_PATH:-/}

if ! command -v wrk >/dev/null 2>&1; then
  echo "wrk not found: apt-get install -y wrk" >&2
  exit 1
fi

# 1,000 connections need 1,000+ descriptors in the server and in wrk.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((CONNECTIONS + 100)) ]; then
  echo "warning: ulimit -n is $(ulimit -n), below $CONNECTIONS connections" >&2
fi

echo "== building http_server (release)"
cargo build --release --quiet -p hashwheel-integration --example http_server
BIN=target/release/examples/http_server

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_for_port() {
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "server on port $1 did not come up" >&2
  return 1
}

# wrk's latency figure in ms ("812.00us", "1.53ms", "1.02s").
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000
    printf "%.2f", n
  }'
}

# run TIMER ROUND: one server, a warm-up, one measured wrk run.
run() {
  local timer=$1 round=$2 port=$((PORT + round * 2)) out
  if [ "$timer" = tokio ]; then port=$((port + 1)); fi
  out="$WORK/$timer-$round.txt"
  "$BIN" --timer "$timer" --addr "127.0.0.1:$port" >"$WORK/$timer-$round.server.txt" 2>&1 &
  SERVER_PID=$!
  wait_for_port "$port"
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$WARMUP" "http://127.0.0.1:$port$URL_PATH" >/dev/null 2>&1 || true
  wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "http://127.0.0.1:$port$URL_PATH" >"$out" 2>&1
  kill -INT "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=

  local rps p50 p75 p90 p99 errors
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' "$out")")
  p75=$(to_ms "$(awk '$1 == "75%" {print $2}' "$out")")
  p90=$(to_ms "$(awk '$1 == "90%" {print $2}' "$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' "$out")")
  errors=$(awk '/Socket errors|Non-2xx/ {sub(/^ +/, ""); printf "%s; ", $0}' "$out")
  printf "%-10s %5s %12s %9s %9s %9s %9s  %s\n" "$timer" "$round" "${rps:-?}" "$p50" "$p75" "$p90" "$p99" "${errors:-none}"
  echo "$timer $rps $p99" >>"$WORK/summary.txt"
}

echo "== W7: wrk -t$THREADS -c$CONNECTIONS -d$DURATION on http://127.0.0.1$URL_PATH, $ROUNDS round(s), $(nproc) cores"
printf "%-10s %5s %12s %9s %9s %9s %9s  %s\n" timer round "requests/s" "p50 ms" "p75 ms" "p90 ms" "p99 ms" errors
for round in $(seq 1 "$ROUNDS"); do
  run hashwheel "$round"
  run tokio "$round"
done

echo "== mean over rounds"
awk '
  { n[$1]++; rps[$1] += $2; p99[$1] += $3 }
  END {
    printf "%-10s %12s %9s\n", "timer", "requests/s", "p99 ms"
    for (t in n) printf "%-10s %12.0f %9.2f\n", t, rps[t] / n[t], p99[t] / n[t]
    if (n["hashwheel"] && n["tokio"]) {
      printf "hashwheel / tokio: requests/s %.3f, p99 %.3f (above 1 / below 1 is better for hashwheel)\n",
        (rps["hashwheel"] / n["hashwheel"]) / (rps["tokio"] / n["tokio"]),
        (p99["hashwheel"] / n["hashwheel"]) / (p99["tokio"] / n["tokio"])
    }
  }' "$WORK/summary.txt"
