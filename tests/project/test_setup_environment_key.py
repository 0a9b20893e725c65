"""``scripts/setup.sh`` keys its cached environment by ``pyproject.toml`` and by the CPU's instruction sets:
pip compiles llama.cpp with ``-march=native``, so a home shared by an AVX-512 machine and an AVX2-only one (a
cluster's nodes, CI runners of two kinds) must not hand the AVX2 one a build that dies on an illegal
instruction. ``--where`` prints the path and builds nothing; everything else about the CPU leaves it alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AVX2 = "fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt aes xsave avx f16c fma bmi1 bmi2 avx2 hypervisor"
AVX512 = AVX2 + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16"


def cpuinfo(folder: Path, flags: str, model: str = "AMD EPYC", mhz: str = "2445.406") -> Path:
    path = folder / f"cpuinfo-{abs(hash((flags, model, mhz)))}"
    path.write_text(
        "".join(
            f"processor\t: {n}\nmodel name\t: {model}\ncpu MHz\t\t: {mhz}\nflags\t\t: {flags}\nbugs\t\t: spectre_v1\n\n"
            for n in range(2)
        )
    )
    return path


def where(checkout: Path, home: Path, info: Path, **env: str) -> str:
    done = subprocess.run(
        ["bash", str(checkout / "scripts" / "setup.sh"), "--where"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "HARNESS_CPUINFO": str(info), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout.strip()


def test_the_environment_is_one_per_dependency_set_and_instruction_set(tmp_path):
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", checkout / "scripts")
    shutil.copy(ROOT / "pyproject.toml", checkout)
    avx512 = where(checkout, home, cpuinfo(tmp_path, AVX512))
    assert avx512.startswith(f"{home}/.cache/harness/venvs/")
    # another model name, clock, bug list or a flag no compiler emits: the same environment
    same = cpuinfo(tmp_path, AVX512.replace(" hypervisor", " hypervisor md_clear"), model="AMD EPYC 9R14", mhz="3700")
    assert where(checkout, home, same) == avx512
    # an AVX2-only CPU gets its own environment (and its own llama.cpp build)
    avx2 = where(checkout, home, cpuinfo(tmp_path, AVX2))
    assert avx2 != avx512 and avx2.startswith(f"{home}/.cache/harness/venvs/")
    # a dependency change: another environment on the same CPU
    (checkout / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text() + "\n# changed\n")
    assert where(checkout, home, cpuinfo(tmp_path, AVX512)) not in (avx512, avx2)
    # a chosen environment is taken as given; and --where created nothing
    assert where(checkout, home, cpuinfo(tmp_path, AVX2), HARNESS_VENV=str(tmp_path / "mine")) == str(tmp_path / "mine")
    assert not home.exists()


def test_the_suites_environment_is_the_one_setup_prints_for_this_cpu():
    """The environment this suite runs in, when ``scripts/test.sh`` made it, is the one ``--where`` names here."""
    cached = Path.home() / ".cache" / "harness" / "venvs"
    if Path(sys.prefix).parent != cached:
        pytest.skip(f"this suite runs in {sys.prefix}, not in an environment scripts/setup.sh made under {cached}")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "setup.sh"), "--where"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(sys.prefix)
