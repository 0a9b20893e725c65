"""Makes the stock ``lm_eval --model harness`` work. lm-eval 0.4.13 finds models only in its own table
(no entry points), so a one-line ``.pth`` file (``harness-lm-eval.pth``, written by
``scripts/setup.sh`` or ``harness lm-eval --install-hook``) calls ``install()`` at interpreter start.
That adds an import hook which, when lm-eval imports ``lm_eval.models``, registers ``harness`` as a
lazy entry. The .pth loads this file by path under a private name: interpreter start imports nothing
of the ``harness`` package (pytest would warn that it cannot rewrite an already-imported plugin
package), and nothing happens in processes that never import lm-eval. Keep this file free of
``harness`` imports.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path

TARGET = "harness.run.point_lm:PointLM"
PTH_NAME = "harness-lm-eval.pth"
PRIVATE_NAME = "_harness_lm_eval_hook"


def register() -> None:
    from lm_eval.api.registry import model_registry

    if "harness" not in model_registry:
        model_registry.register("harness", target=TARGET)


class _Hook(importlib.abc.MetaPathFinder):
    harness_lm_eval_hook = True  # recognised across copies of this module (the .pth may run twice)

    def find_spec(self, name, path=None, target=None):
        if name != "lm_eval.models":
            return None
        sys.meta_path.remove(self)  # one shot; also keeps find_spec below from finding us again
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module = spec.loader.exec_module

        def exec_module(module):
            run_module(module)
            register()

        spec.loader.exec_module = exec_module
        return spec


def install() -> None:
    if "lm_eval.models" in sys.modules:
        register()
    elif not any(getattr(finder, "harness_lm_eval_hook", False) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Hook())


def write_pth(site_packages: str | Path) -> Path:
    """Write the ``.pth`` file into ``site_packages`` (the environment lm_eval runs in)."""
    path = Path(site_packages) / PTH_NAME
    # Found through the installed harness at every start (no absolute path: the checkout may move);
    # a no-op once harness is uninstalled.
    line = (
        "import importlib.util as _u; _h = _u.find_spec('harness'); "
        "_f = _h and _h.submodule_search_locations and _h.submodule_search_locations[0] + '/lm_eval_hook.py'; "
        f"_s = _f and _u.spec_from_file_location({PRIVATE_NAME!r}, _f); _m = _s and _u.module_from_spec(_s); "
        "_m and (_s.loader.exec_module(_m), _m.install())\n"
    )
    path.write_text(line, encoding="utf-8")
    return path
