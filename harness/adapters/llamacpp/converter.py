"""HF checkpoint -> GGUF through llama.cpp's own ``convert_hf_to_gguf.py``, at the engine's llama.cpp version.

The converter users run is the one gated: ``convert_hf_to_gguf.py`` with its ``conversion/`` package and the
``gguf-py`` of the same llama.cpp, from the source distribution of the installed llama-cpp-python
(``vendor/llama.cpp``). ``scripts/setup.sh`` extracts those into ``~/.cache/harness/llama-cpp-src/<version>``
(``$HARNESS_LLAMACPP_SRC`` names another root). The converter runs in a subprocess (``convert_main``): it
puts its own gguf-py ahead of the installed one, and a refusal is its exit status and last log line.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from harness.adapters.base import PointSkipped
from harness.errors import HarnessError

ENV = "HARNESS_LLAMACPP_SRC"
RECORD = "conversion.json"  # beside the converted GGUF: what made it
SETUP = "scripts/setup.sh"
# The converter's own words for "not this checkpoint" (an architecture or a tokenizer it does not know);
# any other failure is a fault of the conversion, not a limit of the engine.
_REFUSALS = re.compile(r"is not supported|not recognized|NotImplementedError|Unsupported|not supported")


class ConversionFailed(HarnessError):
    """llama.cpp's converter failed on a checkpoint it should take (the message quotes it)."""


class ConversionRefused(PointSkipped):
    """llama.cpp's converter does not take this checkpoint (architecture or tokenizer): llama.cpp cannot run it."""


@dataclass(frozen=True)
class Conversion:
    """What made a converted GGUF; recorded in the point's engine info (``converter``)."""

    converter: str  # identity(): the converter and the llama.cpp version it comes from
    outtype: str
    pre_tokenizer: Optional[str] = None  # set where the checkpoint's tokenizer was not in the converter's list
    convert_s: float = 0.0

    @classmethod
    def read(cls, gguf: Path) -> Optional[Conversion]:
        path = Path(gguf).parent / RECORD
        return cls(**json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None


def version() -> str:
    """The installed llama-cpp-python's version: the converter must be the one its llama.cpp shipped with."""
    from importlib.metadata import version as installed

    return installed("llama_cpp_python")


def identity(of: Optional[str] = None) -> str:
    """The converter as one plain value, for records and cache keys."""
    return f"llama.cpp convert_hf_to_gguf.py (llama-cpp-python {of or version()})"


def key(of: Optional[str] = None) -> str:
    """``identity()`` as a file-name part."""
    return f"hf2gguf-{of or version()}"


def source_dir(of: Optional[str] = None) -> Path:
    root = os.environ.get(ENV) or Path.home() / ".cache" / "harness" / "llama-cpp-src"
    return Path(root).expanduser() / (of or version())


def missing_reason(of: Optional[str] = None) -> Optional[str]:
    """Why the converter cannot run here (it was never extracted), naming the set-up step; None when it can."""
    src = source_dir(of)
    if (src / "convert_hf_to_gguf.py").exists() and (src / "gguf-py" / "gguf").is_dir():
        return None
    return (
        f"llama.cpp's converter (convert_hf_to_gguf.py from the llama-cpp-python {of or version()} sdist) is not "
        f"in {src}: run {SETUP} (it extracts it), or set ${ENV} to a folder holding <version>/convert_hf_to_gguf.py"
    )


def fallback_pre_tokenizer(hf_dir: Path) -> Optional[str]:
    """``gpt-2`` where the tokenizer is a plain byte-level split with GPT-2's regex: llama.cpp's name for what it
    does, used only if the converter does not recognise the tokenizer. None for anything else (no guess)."""
    path = Path(hf_dir) / "tokenizer.json"
    if not path.exists():
        return None
    spec = json.loads(path.read_text(encoding="utf-8")).get("pre_tokenizer") or {}
    parts = spec.get("pretokenizers") or [spec]
    if parts and all(p.get("type") == "ByteLevel" for p in parts) and any(p.get("use_regex", True) for p in parts):
        return "gpt-2"
    return None


def last_words(stderr: str) -> str:
    """The converter's own message: its last log or exception line, without the logger prefix."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if not line.startswith(("INFO:", "WARNING:", "**", "File ", "^", "~")):
            return re.sub(r"^(ERROR|CRITICAL):[\w.-]+:", "", line).strip()
    return lines[-1] if lines else "no message"


def refused(message: str) -> bool:
    """True when the converter's ``message`` says it does not take the checkpoint (a limit of the engine)."""
    return bool(_REFUSALS.search(message))


def convert(hf_dir: Path, out: Path, outtype: str = "f16") -> Conversion:
    """Write ``hf_dir`` as the GGUF ``out`` (and ``RECORD`` beside it) with llama.cpp's converter."""
    of = version()
    step = f"GGUF conversion ({identity(of)})"
    reason = missing_reason(of)
    if reason:
        raise PointSkipped(f"{hf_dir}: {step}: {reason}")
    pre = fallback_pre_tokenizer(hf_dir)
    runner = Path(__file__).with_name("convert_main.py")
    command = [sys.executable, str(runner), str(source_dir(of)), pre or "-", "--"]
    command += [str(hf_dir), "--outfile", str(out), "--outtype", outtype]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if done.returncode != 0 or not Path(out).exists():
        message = last_words(done.stderr)
        error = ConversionRefused if refused(message) else ConversionFailed
        verb = "refused the checkpoint" if error is ConversionRefused else f"failed (exit {done.returncode})"
        raise error(f"{hf_dir}: {step} {verb}: {message}")
    from harness.adapters.llamacpp.convert_main import MARKER

    used = pre if any(line.startswith(MARKER) for line in done.stderr.splitlines()) else None
    conversion = Conversion(identity(of), outtype, used, round(time.perf_counter() - start, 3))
    (Path(out).parent / RECORD).write_text(json.dumps(asdict(conversion), indent=2), encoding="utf-8")
    return conversion
