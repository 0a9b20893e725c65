"""What torch says about the hf adapter's device: its name, driver, allocator figures and how to wait for it."""

from __future__ import annotations

from typing import Optional


def memory(torch, device) -> tuple[Optional[float], Optional[str]]:
    """(peak allocated MiB, None) or (None, why it is not known)."""
    kind = device.type
    if kind == "cpu":
        return None, "cpu: host memory is peak_rss_mb"
    if kind in ("cuda", "xpu"):
        return getattr(torch, kind).max_memory_allocated(device) / 2**20, None
    if kind == "mps":
        return torch.mps.driver_allocated_memory() / 2**20, None
    return None, f"torch has no allocator statistics for {kind}"


def reset_memory_peak(torch, device) -> None:
    if device.type in ("cuda", "xpu"):
        getattr(torch, device.type).reset_peak_memory_stats(device)


def synchronize(torch, device) -> None:
    backend = getattr(torch, device.type, None)
    if device.type != "cpu" and backend is not None:
        backend.synchronize()


def driver(device) -> Optional[str]:
    from harness.adapters import drivers

    probes = {"cuda": drivers.nvidia, "xpu": drivers.intel_gpu, "mps": drivers.macos}
    probe = probes.get(device.type)
    return probe() if probe else None


def name(torch, device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    if device.type == "xpu":
        return torch.xpu.get_device_name(device)
    from harness.records.environment import cpu_model

    return cpu_model() if device.type == "cpu" else device.type
