"""Loaded by every Python process of a suite run under ``benchmarks/suite_time.py --emulate-avx2`` (this folder
leads ``PYTHONPATH``): torch's oneDNN path runs bf16 matmuls with AVX-512 instructions that an AVX2-only CPU
lacks, where torch falls back to its own bf16 gemm (about 15x slower here), so oneDNN is switched off as soon as
torch is imported. torch is not imported here: a process that never uses it pays nothing."""

import importlib.util
import sys


class _SwitchOffOneDNN:
    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            module._C._set_mkldnn_enabled(False)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _SwitchOffOneDNN())
