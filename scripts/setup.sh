#!/usr/bin/env bash
# Create (or reuse) the virtual environment with the harness, its engine and accuracy extras and the test tools, and
# print its path on the last line (scripts/quickstart.sh and scripts/test.sh read it; everything else goes to
# stderr). The environment is cached under ~/.cache/harness/venvs, keyed by pyproject.toml, so a fresh clone
# reuses it and a dependency change rebuilds it; pip's own cache keeps downloads and the llama.cpp wheel it
# built, so a rebuild on the same machine skips the compile.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
key=$(sha256sum "$root/pyproject.toml" | cut -c1-16)
venv=${HARNESS_VENV:-$HOME/.cache/harness/venvs/$key}
say() { echo "[setup $(printf '%3d' "$SECONDS") s] $*" >&2; }
if [[ ! -f "$venv/.ready" ]]; then
    say "creating $venv (first time: about 12 minutes on 2 cores, most of it compiling llama.cpp)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    say "1/3 installing the harness with transformers + CPU torch, OpenVINO GenAI + NNCF, Core ML tools, lm-eval and the test tools (downloads ~1 GB)"
    "$venv/bin/python" -m pip install -q -e "$root[hf,openvino,coreml,accuracy,test]" >&2
    say "2/3 installing llama-cpp-python: pip compiles llama.cpp from source, which takes several minutes (once: pip caches the wheel)"
    "$venv/bin/python" -m pip install -q -e "$root[llamacpp]" >&2
    # optimum-intel pulls PyPI's torchvision, which cannot load beside the CPU torch build
    # ("operator torchvision::nms does not exist") and breaks transformers' imports; text models
    # need no torchvision.
    say "3/3 removing torchvision (pulled by optimum-intel; breaks transformers beside CPU torch)"
    "$venv/bin/python" -m pip uninstall -q -y torchvision >&2 || true
    touch "$venv/.ready"
    say "environment ready"
else
    # Same dependencies: only point the editable install at this checkout.
    "$venv/bin/python" -m pip install -q --no-deps -e "$root" >&2
fi
# lm-eval has no plugin discovery: a .pth hook makes `lm_eval --model harness` work in this venv
"$venv/bin/harness" lm-eval --install-hook >&2
echo "$venv"
