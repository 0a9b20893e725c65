#!/usr/bin/env bash
# Set up and run the test suite (the README's test command; .ci/run calls it).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup.sh" | tail -n 1)
# The report test opens the HTML in a real headless browser: Debian's chromium.
if ! command -v chromium >/dev/null && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
    echo "installing chromium for the report test" >&2
    apt-get install -y -q chromium >/dev/null 2>&1 || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1) \
        || echo "could not install chromium: the browser test will be skipped" >&2
fi
cd "$root"
exec "$venv/bin/python" -m pytest tests "$@"
