#!/usr/bin/env bash
# Set up and run the main job: the quickstart scenario on the embedded default model (Gemma 3 270M).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup.sh" | tail -n 1)
cd "$root"
exec "$venv/bin/harness" run scenarios/quickstart.yaml "$@"
