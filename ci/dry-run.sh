#!/usr/bin/env bash
# The nightly job end to end on this machine: references once, two shards as two processes, merge,
# report, baseline, a second night, and the gate. Usage: bash ci/dry-run.sh [WORKDIR]
# Needs the harness environment on PATH (bash scripts/setup.sh prints it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:-$(mktemp -d)}
scenario="$root/ci/dry_run.yaml"
run_opts=(--harness-isolation none --harness-no-energy --harness-launches 2 -p no:cacheprovider -q)
mkdir -p "$work"
cd "$work"

harness reference "$scenario" --reference-dir references

night() {  # $1 = night name: two shards in parallel, then merge
    for shard in 1 2; do
        pytest "$scenario" --harness-shard "$shard/2" --harness-results "$1/shard$shard" \
            --harness-reference-dir references --benchmark-json "$1/shard$shard.json" "${run_opts[@]}" \
            > "$1-shard$shard.log" 2>&1 &
    done
    status=0
    wait %1 || status=1
    wait %2 || status=1
    cat "$1-shard1.log" "$1-shard2.log"
    [[ $status == 0 ]] || { echo "a shard failed" >&2; return 1; }
    harness merge "$1/shard1" "$1/shard2" -o "$1/merged"
}

mkdir -p night1 night2
night night1
harness report night1/merged -o report1
harness baseline save night1/merged --name nightly --baselines-dir baselines
night night2
harness report night2/shard1.json night2/shard2.json -o report2   # benchmark JSON works as input too
harness compare nightly night2/merged --baselines-dir baselines
# Millisecond-scale tiny models, two shards sharing the cores: timings here only exercise the path, so the
# thresholds are loose; lost points, failures and broken agreement still fail the gate.
loose=(--baseline nightly --baselines-dir baselines --max-regression tpot=300%,ttft=300%)
for shard in 1 2; do  # each runner confirms on its own device what looks like a regression
    harness gate "night2/shard$shard" "${loose[@]}" --present-only --confirm 1
done
harness gate night2/merged "${loose[@]}"
echo "dry run passed in $work"
