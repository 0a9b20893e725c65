"""Whether Zeus could read any energy counter on this machine, found without importing Zeus.

Importing Zeus's monitor imports scikit-learn (1–2.5 s a process). On a machine with no RAPL powercap tree,
no NVML or AMD SMI library and no Apple or Jetson SoC counters it would read nothing, so the energy meter
says why without it. The checks are Zeus's own (``zeus.device.*`` ``*_is_available``), made first and
cheaply; wherever one is unsure, Zeus is asked as before.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
import sys
from typing import Optional

# zeus.device.cpu.rapl's RAPL_DIR and CONTAINER_RAPL_DIR (tests/measure/test_energy.py checks they agree)
RAPL_DIRS = ("/sys/class/powercap/intel-rapl", "/zeus_sys/class/powercap/intel-rapl")
NO_GPU = "no GPU visible to Zeus (NVML / AMDSMI)"
NO_SOC = "no Apple SoC energy counters"


def no_rapl() -> str:
    return f"no RAPL interface ({RAPL_DIRS[0]} is absent)"


def rapl_present() -> bool:
    return any(os.path.exists(path) for path in RAPL_DIRS)


def nvml_present() -> bool:
    """NVML initialises: an NVIDIA driver is there (Zeus then counts its GPUs)."""
    try:
        import pynvml
    except ImportError:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    except Exception:  # noqa: BLE001 - an unexpected pynvml: let Zeus decide, as before
        return True
    with contextlib.suppress(Exception):
        pynvml.nvmlShutdown()
    return True


def amdsmi_present() -> bool:
    """The amdsmi package imports (it finds libamd_smi.so); Zeus then tries to initialise it."""
    try:
        with contextlib.redirect_stdout(None):  # amdsmi prints when its library is missing
            importlib.import_module("amdsmi")
    except (ImportError, OSError, AttributeError, KeyError):  # the failures Zeus reads as "unavailable"
        return False
    return True


def soc_present() -> bool:
    """An Apple silicon Mac or a Jetson board, the SoCs Zeus reads."""
    machine = platform.machine().lower()
    if sys.platform == "darwin":
        return machine == "arm64"
    return machine == "aarch64" and (
        os.path.exists("/usr/lib/aarch64-linux-gnu/tegra") or os.path.exists("/etc/nv_tegra_release")
    )


def nothing_to_read() -> Optional[dict[str, str]]:
    """{source: why it is not measured} for every source when Zeus could read none here, with the reasons
    Zeus's own answers give; None when some source might be read (then Zeus is opened and decides)."""
    if rapl_present() or soc_present() or nvml_present() or amdsmi_present():
        return None
    return {"cpu_package": no_rapl(), "dram": no_rapl(), "gpu": NO_GPU, "soc": NO_SOC}
