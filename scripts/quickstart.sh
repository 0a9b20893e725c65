#!/usr/bin/env bash
# The main job: set up, then run the quickstart scenario (the embedded default model, Gemma 3 270M, on
# every engine the default install brings that runs here, each checked by the correctness gate), render
# the HTML report and print, per engine, whether it is right, how fast, and at what energy.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup.sh" | tail -n 1)
cd "$root"
status=0
# The summary and the report show this run's points only: records of an earlier run (another version of
# the scenario) go, unless the run resumes them.
[[ " $* " == *" --resume "* ]] || rm -rf results/quickstart
# The run's own table goes to stderr beside its progress bar: the summary below is the answer.
"$venv/bin/harness" run scenarios/quickstart.yaml --results results "$@" >&2 || status=$?
if [[ -d results/quickstart ]]; then
    "$venv/bin/harness" report results/quickstart -o reports/quickstart >&2
    echo
    "$venv/bin/harness" summary results/quickstart --report "$root/reports/quickstart/index.html"
fi
exit "$status"
