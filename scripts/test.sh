#!/usr/bin/env bash
# Set up and run the test suite (the README's test command; .ci/run calls it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup.sh" | tail -n 1)
cd "$root"
exec "$venv/bin/python" -m pytest tests "$@"
