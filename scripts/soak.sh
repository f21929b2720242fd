#!/usr/bin/env bash
# Soak: run the timer's stress and concurrency test binaries in a loop, the
# way the abort of issue 15 was hunted, and report every failure.
#
#   scripts/soak.sh                          # 10 minutes, debug, every binary
#   scripts/soak.sh --only stress --iterations 5000
#   scripts/soak.sh --time 1h --release --load 2
#
# It builds the binaries once (`cargo test --no-run --message-format=json`
# finds their paths), then runs them one after the other, round after round,
# each with `--nocapture --test-threads=3`, `RUST_BACKTRACE=1`,
# `LIBC_FATAL_STDERR_=1` (glibc's fatal heap errors go to stderr, not the
# terminal) and `ulimit -c unlimited`, in a directory of its own so that a
# core file lands beside its output. A run that exits non-zero keeps its
# output and core under the log directory; a run that passes leaves nothing.
# At the end (or on Ctrl-C) it prints the runs and the failures by exit code.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/soak.sh [options]

  --time DURATION     stop after this long: 90, 90s, 15m, 2h (default 10m)
  --iterations N      stop after N rounds instead (a round runs each binary
                      once); with --time too, whichever comes first
  --only NAMES        comma-separated binaries to run, of: stress,
                      concurrency, wakeup_protocol, shuttle_timer,
                      thread_driver, delay, fork (the thread driver's,
                      built with the feature thread), guarantees (the
                      matrix of every promise on every driver,
                      tests/guarantees.rs) (default: all eight)
  --release           build and run the release binaries (default: debug,
                      as `cargo test` builds them: debug assertions on)
  --load N            keep N busy-looping processes beside the tests, to
                      reproduce load (default 0)
  --test-threads N    passed to each binary (default 3)
  --run-timeout SECS  a run still going after this is killed with SIGABRT
                      (so it leaves a core) and counted as hung, exit 124
                      (default 300)
  --log-dir DIR       where failures are kept (default target/soak/<date>)
  --stop-on-failure   stop at the first failure
  -h, --help          this text

Exit status: 0 if every run passed, 1 if any failed, 2 on bad usage.
Open a core with:  gdb -batch -ex 'thread apply all bt' BINARY CORE
EOF
}

die_usage() {
  echo "soak.sh: $1" >&2
  usage >&2
  exit 2
}

# `has_value "$@"`: the option in $1 is followed by a value.
has_value() {
  [ $# -ge 2 ] || die_usage "$1 needs a value"
}

# `number OPTION VALUE [MIN]`: VALUE is a whole number, at least MIN (1).
number() {
  if ! [[ "$2" =~ ^[0-9]+$ ]] || [ "$2" -lt "${3:-1}" ]; then
    die_usage "$1 needs a number of ${3:-1} or more, not '$2'"
  fi
}

# "90" / "90s" / "15m" / "2h" -> seconds.
to_seconds() {
  case "$1" in
    *[!0-9smh]* | '' | [smh]*) return 1 ;;
    *h) echo $((${1%h} * 3600)) ;;
    *m) echo $((${1%m} * 60)) ;;
    *s) echo "${1%s}" ;;
    *) echo "$1" ;;
  esac
}

time_limit=600
time_given=0
iterations=0
only="stress,concurrency,wakeup_protocol,shuttle_timer,thread_driver,delay,fork,guarantees"
release=0
load=0
test_threads=3
run_timeout=300
log_dir=""
stop_on_failure=0

while [ $# -gt 0 ]; do
  case "$1" in
    --time)
      has_value "$@"
      time_limit=$(to_seconds "$2") || die_usage "bad duration: $2"
      time_given=1
      shift 2
      ;;
    --iterations)
      has_value "$@"
      number "$1" "$2"
      iterations=$2
      shift 2
      ;;
    --only)
      has_value "$@"
      only=$2
      shift 2
      ;;
    --release)
      release=1
      shift
      ;;
    --load)
      has_value "$@"
      number "$1" "$2" 0
      load=$2
      shift 2
      ;;
    --test-threads)
      has_value "$@"
      number "$1" "$2"
      test_threads=$2
      shift 2
      ;;
    --run-timeout)
      has_value "$@"
      number "$1" "$2"
      run_timeout=$2
      shift 2
      ;;
    --log-dir)
      has_value "$@"
      log_dir=$2
      shift 2
      ;;
    --stop-on-failure)
      stop_on_failure=1
      shift
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *) die_usage "unknown option: $1" ;;
  esac
done
# --iterations alone runs for as long as it takes.
if [ "$iterations" -gt 0 ] && [ "$time_given" -eq 0 ]; then
  time_limit=0
fi

cd "$(dirname "$0")/.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
case "$target_dir" in /*) ;; *) target_dir=$root/$target_dir ;; esac
[ -n "$log_dir" ] || log_dir="$target_dir/soak/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$log_dir"
log_dir=$(cd "$log_dir" && pwd)

profile_flag=()
[ "$release" -eq 1 ] && profile_flag=(--release)

# Which binaries, and which of them need the shuttle build.
declare -a names=()
IFS=, read -r -a wanted <<<"$only"
for name in "${wanted[@]}"; do
  case "$name" in
    stress | concurrency | wakeup_protocol | shuttle_timer | thread_driver | delay | fork | guarantees) names+=("$name") ;;
    *) die_usage "unknown binary in --only: $name" ;;
  esac
done
[ "${#names[@]}" -gt 0 ] || die_usage "--only names no binary"

# Builds test targets and records each executable in `binary`, by name,
# from cargo's JSON messages ("executable" is set on test artifacts only).
declare -A binary=()
build() {
  local json path base
  if ! json=$(cargo test --no-run --message-format=json "$@"); then
    echo "soak.sh: the build failed: cargo test --no-run $*" >&2
    exit 1
  fi
  while read -r path; do
    base=${path##*/}
    binary[${base%-*}]=$path
  done < <(sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' <<<"$json")
}

plain=()
for name in "${names[@]}"; do
  [ "$name" = shuttle_timer ] || plain+=(--test "$name")
done
echo "== building ${names[*]} (${profile_flag[*]:-debug})"
if [ "${#plain[@]}" -gt 0 ]; then
  # `thread` is additive: the timer's own tests build the same with it, and
  # the thread driver's need it.
  build "${profile_flag[@]}" --features thread "${plain[@]}"
fi
for name in "${names[@]}"; do
  if [ "$name" = shuttle_timer ]; then
    # The model builds only with --cfg shuttle, in a target dir of its own.
    RUSTFLAGS="--cfg shuttle" build "${profile_flag[@]}" \
      --test shuttle_timer --target-dir "$target_dir/shuttle"
  fi
done
for name in "${names[@]}"; do
  if [ -z "${binary[$name]:-}" ]; then
    echo "soak.sh: cargo built no binary for $name" >&2
    exit 1
  fi
  echo "   $name: ${binary[$name]}"
done

# Cores: where the kernel puts them.
core_pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo core)
ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)" 2>/dev/null || true
echo "== cores: ulimit -c $(ulimit -c), kernel.core_pattern '$core_pattern'"
case "$core_pattern" in
  '|'*) echo "   cores are piped to a helper, not written here: see coredumpctl or the helper's directory" ;;
  /*) echo "   cores are written under ${core_pattern%/*}" ;;
esac

# Optional CPU load beside the tests: busy loops, ended by their own PIDs.
load_pids=()
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${load_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  load_pids=()
}
for _ in $(seq 1 "$load"); do
  (while :; do :; done) &
  load_pids+=($!)
done
[ "$load" -gt 0 ] && echo "== $load busy loops beside the tests"

declare -A runs=() failures=() by_code=()
total_runs=0
total_failures=0
failure_list=()
interrupted=0

signal_name() {
  local code=$1
  if [ "$code" -eq 124 ]; then
    echo "hung: killed after ${run_timeout}s"
  elif [ "$code" -gt 128 ]; then
    echo "SIG$(kill -l $((code - 128)) 2>/dev/null || echo "?")"
  elif [ "$code" -eq 101 ]; then
    echo "test failure or panic"
  else
    echo "exit $code"
  fi
}

summary() {
  stop_load
  echo
  echo "== soak summary: $total_runs runs, $total_failures failed, $(($(date +%s) - start))s"
  local name code
  for name in "${names[@]}"; do
    echo "   $name: ${runs[$name]:-0} runs, ${failures[$name]:-0} failed"
  done
  for code in "${!by_code[@]}"; do
    echo "   exit $code ($(signal_name "$code")): ${by_code[$code]} runs"
  done
  local failure
  for failure in "${failure_list[@]}"; do
    echo "   $failure"
  done
  if [ "$total_failures" -gt 0 ]; then
    echo "   outputs and cores: $log_dir"
  else
    rmdir "$log_dir" 2>/dev/null || true
  fi
  [ "$interrupted" -eq 0 ] || echo "   (interrupted)"
}

on_interrupt() {
  interrupted=1
  summary
  trap - EXIT
  exit 130
}
trap on_interrupt INT TERM
trap stop_load EXIT

# One run of `name`, in its own directory; keeps it only if it failed.
run_one() {
  local name=$1 bin=${binary[$1]} dir
  dir=$log_dir/$name-$(printf '%06d' "$round")
  mkdir -p "$dir"
  local code=0
  (
    cd "$dir"
    export RUST_BACKTRACE=1 LIBC_FATAL_STDERR_=1
    # The model explores other schedules each round (its default seed
    # repeats the same ones).
    export HASHWHEEL_SHUTTLE_SEED=$((seed + round))
    exec timeout -s ABRT -k 30 "$run_timeout" "$bin" --nocapture --test-threads="$test_threads"
  ) >"$dir/output.txt" 2>&1 || code=$?
  runs[$name]=$((${runs[$name]:-0} + 1))
  total_runs=$((total_runs + 1))
  if [ "$code" -eq 0 ]; then
    rm -rf "$dir"
    return 0
  fi
  failures[$name]=$((${failures[$name]:-0} + 1))
  by_code[$code]=$((${by_code[$code]:-0} + 1))
  total_failures=$((total_failures + 1))
  local cores
  cores=$(find "$dir" -maxdepth 1 -name 'core*' -type f 2>/dev/null | tr '\n' ' ')
  local entry
  entry="$name round $round: exit $code ($(signal_name "$code")), output $dir/output.txt"
  [ "$name" = shuttle_timer ] && entry+=", HASHWHEEL_SHUTTLE_SEED=$((seed + round))"
  [ -n "$cores" ] && entry+=", core ${cores% }"
  failure_list+=("$entry")
  echo "!! $entry"
  # The failing tests and the last lines of output, to see at a glance
  # (the model's broken-variant tests print panics when they pass).
  {
    grep -E '^test .* FAILED' "$dir/output.txt" | head -n 5 || true
    tail -n 5 "$dir/output.txt"
  } | sed 's/^/   | /'
  if [ -z "$cores" ]; then
    echo "   no core file in $dir (kernel.core_pattern '$core_pattern')"
  else
    echo "   open it: gdb -batch -ex 'thread apply all bt' $bin ${cores%% *}"
  fi
  return 1
}

start=$(date +%s)
seed=$start
round=0
echo "== soaking: ${names[*]}; limit ${time_limit}s (0: none), ${iterations} rounds (0: none); logs in $log_dir"
while :; do
  if [ "$iterations" -gt 0 ] && [ "$round" -ge "$iterations" ]; then
    break
  fi
  if [ "$time_limit" -gt 0 ] && [ $(($(date +%s) - start)) -ge "$time_limit" ]; then
    break
  fi
  round=$((round + 1))
  for name in "${names[@]}"; do
    if ! run_one "$name" && [ "$stop_on_failure" -eq 1 ]; then
      break 2
    fi
  done
  if [ $((round % 50)) -eq 0 ]; then
    echo "   round $round: $total_runs runs, $total_failures failed, $(($(date +%s) - start))s"
  fi
done
summary
[ "$total_failures" -eq 0 ]
