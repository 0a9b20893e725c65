"""What an inline pytest run (pytester's ``runpytest``) leaves behind for the tests after it.

An inline run drops from ``sys.modules`` every module it imported first, while the ``multiprocessing``
package keeps them as attributes. A module first imported inside one (Zeus's RAPL tracker imports
``multiprocessing.sharedctypes``, which imports ``multiprocessing.heap``) is then imported twice: a shared
``Value`` made afterwards holds the first import's ``BufferWrapper`` and no longer pickles into a spawned
process ("not the same object as multiprocessing.heap.BufferWrapper"), which failed
tests/measure/test_energy.py after tests/moe. tests/conftest.py imports them before any inline run."""

from __future__ import annotations

import multiprocessing


def _set(value) -> None:
    value.value = 1


def test_a_shared_value_reaches_a_spawned_process_after_an_inline_run_imported_its_modules(pytester):
    pytester.makepyfile("def test_inner():\n    import multiprocessing.sharedctypes  # noqa: F401\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    context = multiprocessing.get_context("spawn")
    value = context.Value("i", 0)
    process = context.Process(target=_set, args=(value,))
    process.start()
    process.join(60)
    assert process.exitcode == 0 and value.value == 1
