#!/usr/bin/env bash
# Create (or reuse) the virtual environment with the harness, its engine and accuracy extras and the test tools, and
# print its path on the last line (scripts/quickstart.sh and scripts/test.sh read it; everything else goes to
# stderr). The environment is cached under ~/.cache/harness/venvs, keyed by pyproject.toml and the CPU's
# instruction sets, so a fresh clone reuses it and a dependency change rebuilds it. pip compiles llama.cpp
# for the CPU it builds on (-march=native): the same home on a CPU without that build's AVX-512 or AMX would
# die on an illegal instruction, so another instruction set gets its own environment, and the wheel pip
# built is cached per instruction set too (a rebuild on the same CPU skips the compile).
# `bash scripts/setup.sh --where` prints the environment's path and creates nothing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The instruction-set flags a compiler may use with -march=native (not the model name, clock or bug flags).
cpuinfo=${HARNESS_CPUINFO:-/proc/cpuinfo}
isa=$( { grep -m1 '^flags' "$cpuinfo" 2>/dev/null || true; } | cut -d: -f2 | tr ' ' '\n' \
    | grep -E '^(sse.*|ssse3|avx.*|amx.*|fma.*|f16c|bmi.*|abm|popcnt|movbe|adx|aes|pclmulqdq|vpclmulqdq|vaes|gfni|sha_ni|cx16|xsave.*|clflushopt|clwb|prfchw)$' \
    | sort | tr '\n' ' ' || true)
isa_key=$(printf '%s' "$isa" | sha256sum | cut -c1-8)
key=$( { cat "$root/pyproject.toml"; printf 'cpu instruction sets: %s\n' "$isa"; } | sha256sum | cut -c1-16)
venv=${HARNESS_VENV:-$HOME/.cache/harness/venvs/$key}
if [[ ${1:-} == --where ]]; then
    echo "$venv"
    exit 0
fi
say() { echo "[setup $(printf '%3d' "$SECONDS") s] $*" >&2; }
if [[ ! -f "$venv/.ready" ]]; then
    say "creating $venv (first time: about 12 minutes on 2 cores, most of it compiling llama.cpp)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    say "1/3 installing the harness with transformers + CPU torch, OpenVINO GenAI + NNCF, Core ML tools, lm-eval and the test tools (downloads ~1 GB)"
    "$venv/bin/python" -m pip install -q -e "$root[hf,openvino,coreml,accuracy,test]" >&2
    say "2/3 installing llama-cpp-python: pip compiles llama.cpp from source, which takes several minutes (once: pip caches the wheel)"
    # its own wheel cache per instruction set: pip keys a built wheel by the source alone
    PIP_CACHE_DIR="$HOME/.cache/harness/pip-llama-cpp/$isa_key" "$venv/bin/python" -m pip install -q -e "$root[llamacpp]" >&2
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
# llama.cpp's own HF -> GGUF converter (convert_hf_to_gguf.py, its conversion/ package, its gguf-py), from the
# source distribution of the pinned llama-cpp-python (vendor/llama.cpp): the llamacpp adapter converts
# checkpoints with it (harness/adapters/llamacpp/converter.py). Kept per version; pip's cache usually holds the
# sdist already (it built the wheel from it), so this takes seconds.
llama_version=$(sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' "$root/pyproject.toml")
converter=${HARNESS_LLAMACPP_SRC:-$HOME/.cache/harness/llama-cpp-src}/$llama_version
if [[ ! -f "$converter/convert_hf_to_gguf.py" ]]; then
    say "extracting llama.cpp's convert_hf_to_gguf.py from the llama-cpp-python $llama_version sdist into $converter"
    sdist=$(mktemp -d)
    "$venv/bin/python" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$llama_version" -d "$sdist" >&2
    mkdir -p "$(dirname "$converter")"
    part=$(mktemp -d "$converter.XXXX")  # renamed into place: an interrupted set-up leaves no half converter
    top="llama_cpp_python-$llama_version/vendor/llama.cpp"
    tar -xzf "$sdist/llama_cpp_python-$llama_version.tar.gz" -C "$part" --strip-components=3 --wildcards \
        "$top/convert_hf_to_gguf.py" "$top/conversion/*" "$top/gguf-py/*" "$top/LICENSE"
    mv "$part" "$converter"
    rm -rf "$sdist"
fi
# lm-eval has no plugin discovery: a .pth hook makes `lm_eval --model harness` work in this venv
"$venv/bin/harness" lm-eval --install-hook >&2
echo "$venv"
