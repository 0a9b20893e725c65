"""The test suite's cost per tier: wall time, CPU time, the machine and its load, measured, not assumed.

    python benchmarks/suite_time.py [--tiers unit engine acceptance full] [--json FILE] [-- PYTEST ARGS]
    python benchmarks/suite_time.py --tiers unit full --paths tests/measure   # the script on one folder
    python benchmarks/suite_time.py --tiers full --emulate-avx2   # an estimate for an AVX2-only CPU
    python benchmarks/suite_time.py --tiers full --per-test   # where the time goes, test by test

Runs ``pytest tests -m TIER`` for each tier asked (``full``: the whole suite, what CI runs; default
``unit full``), one after another, each in a fresh process, and prints per run: wall time, the CPU time
of pytest and its children, the test counts, and the 1-minute load average before and after (a run on a
loaded machine measures the neighbours too: say the load with the figure). The full run also writes
JUnit XML, from which the tests' own durations are summed per tier (``tests/tiers.py`` assigns them), so
one full run gives each tier's share without running it again. The machine: CPU model (``lscpu``), the
instruction sets the precision paths depend on, and the core count. ``--json`` (default
``reports/suite_time.json``) keeps the figures; docs/testing.md quotes the last quiet measurement.

``--per-test`` also writes each test's wall time, the CPU time of pytest's own process and of the processes
the test started, and the rest (waiting: a time limit, a sleep, a poll) to ``<json>-<tier>-tests.jsonl``
(``benchmarks/per_test_cost.py``), and prints the costliest tests and files: where to look first to make the
suite faster.

``--emulate-avx2`` estimates the suite on an AVX2-only CPU from a machine with AVX-512: every process pytest
starts gets torch's kernels capped at AVX2 (``ATEN_CPU_CAPABILITY``) with oneDNN switched off
(``benchmarks/avx2_emulation/sitecustomize.py``: its bf16 matmuls need AVX-512, so an AVX2 CPU runs torch's own
bf16 gemm), MKL and OpenBLAS capped at AVX2, and llama.cpp built without AVX-512, VNNI or AMX (the pinned
llama-cpp-python compiled once into ``<cache>/avx2-emulation/``, about 4 minutes, and put first on
``PYTHONPATH``). Not emulated: OpenVINO (its CPU plugin reads the CPU itself and has no cap: it keeps bf16
inference and its AVX-512 kernels, so its tests take the bf16 branch), and the other CPU's clock, caches and
memory. A lower bound on that CPU's time, not a measurement of it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import per_test_cost  # noqa: E402
from harness.records.environment import cpu_flags  # noqa: E402
from tests.tiers import TABLE  # noqa: E402  (the one table of each test's tier)

TIERS = ("unit", "engine", "acceptance", "full")
EMULATION = ROOT / "benchmarks" / "avx2_emulation"  # its sitecustomize.py switches torch's oneDNN off
AVX2_ONLY = (  # llama.cpp's CPU features: AVX2 and what every AVX2 CPU has, nothing newer
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF "
    "-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF "
    "-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
)


@dataclass
class TierRun:
    """One ``pytest -m TIER`` run (``full``: no ``-m``)."""

    tier: str
    wall_s: float
    cpu_s: float  # user + system of pytest and everything it started
    exit_code: int
    counts: dict[str, int]  # passed / failed / errors / skipped, from the JUnit XML
    load_before: float  # 1-minute load average
    load_after: float
    per_tier_s: dict[str, float] = field(default_factory=dict)  # the tests' own durations summed by tier
    per_test: dict = field(default_factory=dict)  # with --per-test: per_test_cost.summary of the run


def machine() -> dict:
    model = ""
    if shutil.which("lscpu"):
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "")
    return {"cpu": model or "unknown", "flags": cpu_flags(), "cores": os.cpu_count(), "python": sys.version.split()[0]}


def tier_of(classname: str, name: str) -> str:
    """A JUnit test case's tier (``tests.measure.test_x`` + ``test_fn[param]``); "slow" is not a tier."""
    parts = classname.split(".")
    module = next((i for i, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
    path = "/".join(parts[1 : module + 1]) + ".py"  # drop "tests", stop at the module (classes follow it)
    entry = TABLE.get(path)
    return entry.of(name.split("[", 1)[0]) if entry else "outside the table"


def read_junit(path: Path) -> tuple[dict[str, int], dict[str, float]]:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    per_tier: dict[str, float] = {}
    for case in ElementTree.parse(path).iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        counts[{"failure": "failed", "error": "errors"}.get(outcome, outcome)] += 1
        tier = tier_of(case.get("classname", ""), case.get("name", ""))
        per_tier[tier] = per_tier.get(tier, 0.0) + float(case.get("time", 0))
    return counts, {tier: round(seconds, 1) for tier, seconds in sorted(per_tier.items())}


def avx2_llamacpp(cache: Path) -> Path:
    """The pinned llama-cpp-python built for AVX2 only, installed into a folder of its own (built once)."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    version = pyproject.split('"llama-cpp-python==', 1)[1].split('"', 1)[0]
    target = cache / "avx2-emulation" / f"llama-cpp-python-{version}"
    if (target / "llama_cpp").is_dir():
        return target
    print(f"building llama-cpp-python {version} for AVX2 only into {target} (once; about 4 minutes on 2 cores)")
    partial = target.with_name(target.name + ".part")
    shutil.rmtree(partial, ignore_errors=True)
    with tempfile.TemporaryDirectory() as wheels:
        pip = [sys.executable, "-m", "pip"]
        build = [*pip, "wheel", "-q", "--no-deps", "--no-cache-dir", f"llama-cpp-python=={version}", "-w", wheels]
        subprocess.run(build, env={**os.environ, "CMAKE_ARGS": AVX2_ONLY}, check=True)
        subprocess.run(
            [*pip, "install", "-q", "--no-deps", "--target", str(partial), *map(str, Path(wheels).glob("*.whl"))],
            check=True,
        )
    partial.rename(target)
    return target


def avx2_environment(cache: Path) -> dict[str, str]:
    """What every process of an emulated run inherits (see the module's docstring)."""
    paths = [str(EMULATION), str(avx2_llamacpp(cache)), os.environ.get("PYTHONPATH", "")]
    return {
        "PYTHONPATH": os.pathsep.join(path for path in paths if path),
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
    }


def emulation_check(env: dict[str, str]) -> str:
    """What a process of the emulated run sees: torch's kernels and oneDNN, llama.cpp's CPU features."""
    probe = (
        "import torch, llama_cpp; "
        "print(torch.backends.cpu.get_cpu_capability(), 'oneDNN', 'on' if torch.backends.mkldnn.enabled else 'off', "
        "'llama.cpp', llama_cpp.llama_print_system_info().decode().strip())"
    )
    seen = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env={**os.environ, **env})
    return seen.stdout.strip() or seen.stderr.strip()[-300:]


def run_tier(
    tier: str, paths: list[str], extra: list[str], junit: Path, env: dict[str, str], per_test: Path | None = None
) -> TierRun:
    command = [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", f"--junitxml={junit}"]
    command += [] if tier == "full" else ["-m", tier]
    if per_test is not None:
        per_test.unlink(missing_ok=True)
        command += ["-p", "benchmarks.per_test_cost"]
        env = {**env, per_test_cost.ENV: str(per_test)}
    load_before = os.getloadavg()[0]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    exit_code = subprocess.run([*command, *extra], cwd=ROOT, env={**os.environ, **env}).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    counts, per_tier = read_junit(junit) if junit.exists() else ({}, {})
    return TierRun(
        tier=tier,
        wall_s=round(wall, 1),
        cpu_s=round(cpu, 1),
        exit_code=exit_code,
        counts=counts,
        load_before=round(load_before, 2),
        load_after=round(os.getloadavg()[0], 2),
        per_tier_s=per_tier if tier == "full" else {},
        per_test=per_test_cost.summary(per_test_cost.read(per_test)) if per_test and per_test.exists() else {},
    )


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def print_per_test(found: dict, where: Path) -> None:
    print(
        f"{'':<10}   {found['tests']} tests: {found['wall_s']:.0f} s wall, {found['own_cpu_s']:.0f} s CPU in pytest, "
        f"{found['children_cpu_s']:.0f} s in its children, {found['waiting_s']:.0f} s waiting ({where})"
    )
    for title, key, count in (("slowest tests", "slowest_tests", 10), ("most waiting", "most_waiting_tests", 5)):
        print(f"{'':<10}   {title}:")
        for cost in found[key][:count]:
            print(f"{'':<12} " + per_test_cost.Cost(**{k: v for k, v in cost.items() if k != "waiting_s"}).row())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", nargs="+", choices=TIERS, default=["unit", "full"])
    parser.add_argument("--paths", nargs="+", default=["tests"], help="what pytest collects (a check of the script)")
    parser.add_argument("--json", type=Path, default=ROOT / "reports" / "suite_time.json")
    parser.add_argument("--emulate-avx2", action="store_true", help="estimate an AVX2-only CPU (see the docstring)")
    parser.add_argument("--per-test", action="store_true", help="each test's wall, CPU and waiting (the docstring)")
    parser.add_argument(
        "--cache", type=Path, default=Path.home() / ".cache" / "harness", help="where the AVX2 build goes"
    )
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to every pytest run")
    args = parser.parse_args()
    about = machine()
    print(f"machine: {about['cpu']}, {about['cores']} cores, flags {' '.join(about['flags']) or '-'}")
    env = avx2_environment(args.cache) if args.emulate_avx2 else {}
    if env:
        about["emulated"] = f"AVX2 only, OpenVINO not capped: {emulation_check(env)}"
        print(f"emulated: {about['emulated']}")
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        for tier in args.tiers:
            per_test = args.json.with_name(f"{args.json.stem}-{tier}-tests.jsonl") if args.per_test else None
            if per_test:
                per_test.parent.mkdir(parents=True, exist_ok=True)
            run = run_tier(tier, args.paths, args.pytest_args, Path(scratch) / f"{tier}.xml", env, per_test)
            runs.append(run)
            counted = ", ".join(f"{n} {what}" for what, n in run.counts.items() if n)
            print(
                f"{tier:<10} {minutes(run.wall_s):>14} wall, {minutes(run.cpu_s)} CPU, exit {run.exit_code} "
                f"({counted}); load {run.load_before:.2f} before, {run.load_after:.2f} after"
            )
            for name, seconds in run.per_tier_s.items():
                print(f"{'':<10}   {name}: {minutes(seconds)} of test time")
            if run.per_test:
                print_per_test(run.per_test, per_test)
    measured = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": about,
        "runs": [asdict(run) for run in runs],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"written: {args.json}")
    return max((run.exit_code for run in runs), default=0)


if __name__ == "__main__":
    sys.exit(main())
