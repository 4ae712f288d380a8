#!/usr/bin/env bash
# Builds the fuzz preset (clang, libFuzzer + ASan/UBSan) and runs the fuzzers of tests/fuzz, one
# after another, each from its seed corpus (tests/fuzz/corpus/<fuzzer>) for a bounded time.
#
#   scripts/fuzz.sh                      every fuzzer, 60 s each
#   scripts/fuzz.sh fuzz_idx fuzz_csv    those only
#   FUZZ_SECONDS=600 scripts/fuzz.sh     10 minutes each
#   FUZZ_RUNS=1000000 scripts/fuzz.sh    1,000,000 executions each (no time limit unless FUZZ_SECONDS is set)
#
# Other settings: FUZZ_FINDINGS (default build/fuzz/findings), FUZZ_TIMEOUT (seconds one input may
# take before it counts as a hang, 25), FUZZ_RSS_MB (libFuzzer's memory limit, 2560), FUZZ_NO_BUILD=1
# (use the binaries as they are), FUZZ_JOBS (build jobs, 2).
#
# Inputs a fuzzer finds new go to build/fuzz/corpus/<fuzzer>, never into the committed seeds. A
# finding (crash, sanitizer report, hang, memory limit) is written to FINDINGS/<fuzzer>/ and
# makes the script exit 1 once every fuzzer has run; each is replayed once, its output beside it
# (ARTIFACT.replay.log), so a report says whether it reproduces. The last lines of each fuzzer's
# log and its execution count are printed; the whole log is FINDINGS/<fuzzer>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"

runs=${FUZZ_RUNS:-}
seconds=${FUZZ_SECONDS:-$([[ -n $runs ]] && echo 0 || echo 60)}
findings=${FUZZ_FINDINGS:-$root/build/fuzz/findings}
timeout=${FUZZ_TIMEOUT:-25}
rss_mb=${FUZZ_RSS_MB:-2560}

mapfile -t all < <(sed -n 's/^thresher_add_fuzzer(\([A-Za-z0-9_]*\).*/\1/p' tests/fuzz/CMakeLists.txt)
if (($#)); then names=("$@"); else names=("${all[@]}"); fi
for name in "${names[@]}"; do
    if [[ " ${all[*]} " != *" $name "* ]]; then
        echo "fuzz.sh: no fuzzer $name in tests/fuzz/CMakeLists.txt (there are: ${all[*]})" >&2
        exit 2
    fi
done

# The fuzzers alone: the rest of the preset (the app, the tools) is not needed to fuzz.
if [[ ${FUZZ_NO_BUILD:-0} != 1 ]]; then
    cmake --preset fuzz >/dev/null
    cmake --build --preset fuzz -j"${FUZZ_JOBS:-2}" --target "${names[@]}"
fi
bin=$root/build/fuzz/bin

for name in "${names[@]}"; do
    [[ -x $bin/$name ]] || { echo "fuzz.sh: $bin/$name is not built" >&2; exit 2; }
    [[ -d tests/fuzz/corpus/$name ]] || { echo "fuzz.sh: tests/fuzz/corpus/$name: no seed corpus" >&2; exit 2; }
done

failed=()
summary=()
for name in "${names[@]}"; do
    out=$findings/$name
    work=$root/build/fuzz/corpus/$name
    log=$findings/$name.log
    mkdir -p "$out" "$work"
    args=(-max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1
          -artifact_prefix="$out/")
    [[ -n $runs ]] && args+=(-runs="$runs")
    echo "== $name (${runs:+$runs runs}${runs:+, }${seconds} s limit; 0: none)"
    started=$(date +%s)
    touch "$out/.started"
    status=0
    "$bin/$name" "${args[@]}" "$work" "tests/fuzz/corpus/$name" </dev/null >"$log" 2>&1 || status=$?
    elapsed=$(( $(date +%s) - started ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    tail -n 3 "$log" | sed 's/^/   /'

    # This run's artifacts only: earlier findings stay where they are, not counted again.
    found=0
    mapfile -t artifacts < <(find "$out" -maxdepth 1 -type f -newer "$out/.started" \
        \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) ! -name '*.log' | sort)
    for artifact in "${artifacts[@]}"; do
        replay=0
        "$bin/$name" -timeout="$timeout" -rss_limit_mb="$rss_mb" "$artifact" </dev/null >"$artifact.replay.log" 2>&1 || replay=$?
        found=1
        echo "   FINDING: $artifact (replay exit $replay$([[ $replay == 0 ]] && echo ': does not reproduce alone'); $artifact.replay.log)"
    done
    if [[ $status != 0 && $found == 0 ]]; then
        found=1
        echo "   FINDING: $name exited $status without an artifact; see $log"
    fi
    summary+=("$(printf '%-26s %10s execs %6s s  %s' "$name" "${execs:-?}" "$elapsed" "$([[ $found == 1 ]] && echo FINDING || echo ok)")")
    [[ $found == 1 ]] && failed+=("$name")
done

echo
echo "== summary (findings in $findings)"
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "fuzz.sh: findings in: ${failed[*]}" >&2
    exit 1
fi
