#!/usr/bin/env bash
# Create (or reuse) the virtual environment with the harness, its engine and accuracy extras and the test tools, and
# print its path on the last line. The environment is cached under ~/.cache/harness/venvs, keyed by
# pyproject.toml, so a fresh clone reuses it and a dependency change rebuilds it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
key=$(sha256sum "$root/pyproject.toml" | cut -c1-16)
venv=${HARNESS_VENV:-$HOME/.cache/harness/venvs/$key}
if [[ ! -f "$venv/.ready" ]]; then
    echo "setting up $venv (first time: a few minutes)" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q -e "$root[hf,openvino,llamacpp,coreml,accuracy,test]" >&2
    # optimum-intel pulls PyPI's torchvision, which cannot load beside the CPU torch build
    # ("operator torchvision::nms does not exist") and breaks transformers' imports; text models
    # need no torchvision.
    "$venv/bin/python" -m pip uninstall -q -y torchvision >&2 || true
    touch "$venv/.ready"
else
    # Same dependencies: only point the editable install at this checkout.
    "$venv/bin/python" -m pip install -q --no-deps -e "$root" >&2
fi
# lm-eval has no plugin discovery: a .pth hook makes `lm_eval --model harness` work in this venv
"$venv/bin/harness" lm-eval --install-hook >&2
echo "$venv"
