"""The driver under a device, as adapters record it (``describe().driver``). The history keys a series
by it and the regression check compares it, so a driver upgrade starts a new series instead of reading as
a regression. Each probe returns None where there is no such driver (a CPU point on a CPU engine) and never
raises: a version we cannot read is left out, not guessed."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Optional


def kernel_module(name: str) -> Optional[str]:
    """``name version`` of a loaded kernel module that reports one (``amdxdna``, ``xe``, ``i915``, ``nvidia``)."""
    try:
        return f"{name} {Path(f'/sys/module/{name}/version').read_text().strip()}"
    except OSError:
        return None


def nvidia() -> Optional[str]:
    """The NVIDIA driver version through NVML (the package zeus already depends on), else the kernel module."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return f"nvidia {version.decode() if isinstance(version, bytes) else version}"
    except Exception:  # noqa: BLE001 - no NVML, no GPU, an old driver: fall back to the module
        return kernel_module("nvidia")


def intel_gpu() -> Optional[str]:
    return kernel_module("xe") or kernel_module("i915")


def macos() -> Optional[str]:
    release = platform.mac_ver()[0]
    return f"macOS {release}" if release else None


def openvino_plugin(core, device: str) -> Optional[str]:
    """The OpenVINO device plugin's name and build (``openvino_intel_cpu_plugin 2026.4.1-…``), plus the
    NPU driver's own version on NPU: the plugin is the part of OpenVINO that changes per device."""
    base = device.split(":")[0].split(".")[0]
    try:
        found = core.get_versions(base)
    except Exception:  # noqa: BLE001 - a device this install has no plugin for
        return None
    parts = [f"{getattr(v, 'description', name)} {getattr(v, 'build_number', '')}".strip() for name, v in found.items()]
    if base == "NPU":
        try:
            parts.append(f"npu driver {core.get_property('NPU', 'NPU_DRIVER_VERSION')}")
        except Exception:  # noqa: BLE001 - older plugins lack the property
            pass
        parts.append(kernel_module("intel_vpu") or "")
    elif base == "GPU":
        parts.append(intel_gpu() or "")
    return "; ".join(p for p in parts if p) or None
