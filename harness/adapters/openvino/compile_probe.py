"""A compile that kills the process is refused before it can.

OpenVINO 2026.4.1's CPU plugin dies of SIGFPE compiling our tiny Llama IR at bf16 inference precision with
``INFERENCE_NUM_THREADS=1`` on a Xeon with AMX (2 vCPUs, KVM); 2 threads, f32 precision or oneDNN held below AMX
(``ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16``) compile. In the harness's own process (``--isolation none``, the gate's
step-wise request) that signal would end the whole sweep with no record. Where the plugin's properties match that
pattern, a child process compiles the IR first; a child killed by a signal turns the point into a skip that names
the signal, the properties and the setting that compiles. Elsewhere nothing is spawned.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Mapping, Optional

# Compile in a fresh interpreter: read the IR, compile it with the given plugin properties, exit 0.
_CHILD = (
    "import json, sys\n"
    "import openvino as ov\n"
    "core = ov.Core()\n"
    "core.compile_model(core.read_model(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]))\n"
)


def at_risk(device: str, config: Mapping[str, object], default_precision: Optional[str]) -> bool:
    """The pattern seen to crash: the CPU plugin, one inference thread, bf16 inference precision (the hint, or
    the plugin's default where no hint is given)."""
    if device != "CPU" or config.get("INFERENCE_NUM_THREADS") != 1:
        return False
    hint = config.get("INFERENCE_PRECISION_HINT")
    return str(hint if hint is not None else default_precision).lower() in ("bf16", "bfloat16")


def crash_reason(xml: Path, device: str, config: Mapping[str, object], child: str = _CHILD) -> Optional[str]:
    """Compile ``xml`` in a child process; a sentence naming the signal when it died of one, else None."""
    return _probe(str(xml), device, json.dumps(_plain(config), sort_keys=True), child)


@cache
def _probe(xml: str, device: str, config: str, child: str) -> Optional[str]:
    result = subprocess.run([sys.executable, "-c", child, xml, device, config], capture_output=True, text=True)
    if result.returncode >= 0:
        return None  # compiled, or failed with an exception the in-process compile will raise and name itself
    try:
        name = signal.Signals(-result.returncode).name
    except ValueError:
        name = f"signal {-result.returncode}"
    return (
        f"the OpenVINO {device} plugin dies of {name} compiling {xml} with {config} on this CPU "
        "(seen with OpenVINO 2026.4.1 on AMX CPUs at one thread and bf16): set measurement.threads to 2 or more"
    )


def _plain(config: Mapping[str, object]) -> dict:
    """The JSON-able plugin properties; the compile cache stays out (the child's graph is not the pipeline's)."""
    return {k: v for k, v in config.items() if k != "CACHE_DIR" and isinstance(v, (str, int, float, bool))}
