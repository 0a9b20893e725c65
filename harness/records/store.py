"""Result records: one schema-versioned JSON file per sweep point, written atomically.

Data only; rendering lives elsewhere. ``load`` turns records into a pandas DataFrame, one row per point.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator, Optional, TypeVar

from harness.io import REFERENCE_DIR, read_json, safe_name, write_json_atomic
from harness.records.columns import flatten
from harness.records.migration import SCHEMA_VERSION
from harness.records.record import INCOMPLETE, Record

CORRECTNESS_ONLY_SUFFIX = (
    ".verify"  # a gate-only record's file: <point id>.verify.json, beside the run's <point id>.json
)


def record_path(results_dir: Path, record: Record) -> Path:
    """``<results>/<scenario>/<point id>.json``; a gate-only record (``harness verify``) ends ``.verify.json``,
    so it never overwrites the point's run record nor is overwritten by it."""
    suffix = CORRECTNESS_ONLY_SUFFIX if record.correctness_only else ""
    return Path(results_dir) / safe_name(record.scenario) / f"{safe_name(record.point_id)}{suffix}.json"


Source = TypeVar("Source")


def timing_view(pairs: Iterable[tuple[Source, Record]]) -> list[tuple[Source, Record]]:
    """(source, record) pairs with one record per point where a point has a run record and a gate-only one
    (``harness verify``): the run's, which holds the timing; a point with only a gate-only record keeps it.
    Every reader of timing (report tables, summary, compare, the regression check, history) reads this."""
    pairs = list(pairs)
    ran = {(r.scenario, r.point_id) for _, r in pairs if not r.correctness_only}
    return [(source, r) for source, r in pairs if not r.correctness_only or (r.scenario, r.point_id) not in ran]


def timing_records(records: Iterable[Record]) -> list[Record]:
    """``timing_view`` over bare records."""
    return [record for _, record in timing_view((None, record) for record in records)]


def write(record: Record, results_dir: str | Path) -> Path:
    """Write ``record`` atomically (``harness.io.write_json_atomic``), never over a record of a newer schema
    (a newer harness's record is not ours to replace)."""
    path = record_path(Path(results_dir), record)
    refuse_newer(path)
    return write_json_atomic(path, record.to_dict())


def refuse_newer(path: Path) -> None:
    """UsageError when ``path`` holds a record of a schema newer than this harness writes."""
    from harness.errors import UsageError

    try:
        version = read_json(path).get("schema_version")
    except (OSError, ValueError, AttributeError):
        return  # no record there, or not one we could read: writing over it loses nothing readable
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise UsageError(
            f"{path}: holds a record of schema version {version}, newer than this harness writes "
            f"({SCHEMA_VERSION}); it is not overwritten: use a newer harness or another --results"
        )


def read(path: str | Path) -> Record:
    """The record in ``path``; a malformed one is a ValueError naming the file and the field."""
    return Record.from_dict(read_json(path), source=path)


def finished(record: Record, source: object) -> Record:
    """``record``, refused (a ValueError naming ``source``) when it is ``incomplete``: a point interrupted
    between its launches, which no reader may take for a finished point."""
    if record.status == INCOMPLETE:
        raise ValueError(
            f"{source}: status: incomplete: {record.scenario}::{record.point_id} was interrupted before all its "
            f"launches ran ({len(record.samples.launches)} recorded), so it is not a finished point; complete it with "
            "`harness run SCENARIO --results DIR --resume`"
        )
    return record


def _json_files(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """(file, named explicitly) for every JSON file under ``paths``."""
    files: list[tuple[Path, bool]] = []
    for path in map(Path, paths):
        if path.is_dir():  # records only: the gate's reference store may live inside a results directory
            files += [
                (p, False)
                for p in sorted(path.rglob("*.json"))
                if not p.name.startswith(".") and REFERENCE_DIR not in p.relative_to(path).parts
            ]
        elif path.exists():
            files.append((path, True))
        else:
            raise FileNotFoundError(f"no such results file or directory: {path}")
    return files


def iter_records(paths: str | Path | Iterable[str | Path]) -> Iterator[tuple[Path, Record]]:
    """(file, record) for the result records under ``paths``: record files, directories of them, and
    pytest-benchmark JSON files written by the harness plugin (one record per benchmark).

    Other JSON files found while walking a directory (a baseline's manifest, unrelated JSON) are passed
    over; a file named explicitly that holds no records is an error naming it, and so is a record with an
    impossible value (``harness.records.physics``) or of an interrupted point (``finished``).
    """
    from harness.records import benchmark_json

    if isinstance(paths, (str, Path)):
        paths = [paths]
    for file, explicit in _json_files(paths):
        try:
            data = read_json(file)  # NaN/Infinity refused, naming the field
        except OSError as exc:
            raise ValueError(f"{file}: not a readable JSON file ({exc})") from None
        if isinstance(data, dict) and "point_id" in data and "schema_version" in data:
            yield file, finished(Record.from_dict(data, source=file), file)
        elif benchmark_json.is_benchmark_json(data):
            for record in benchmark_json.records(data, source=file):
                yield file, finished(record, file)
        elif not isinstance(data, dict):  # `null` or `[]` where a record belongs: a broken record, not "nothing"
            raise ValueError(f"{file}: holds {type(data).__name__} JSON, not a harness result record")
        elif explicit:
            raise ValueError(
                f"{file}: neither a harness result record nor a pytest-benchmark JSON "
                "file written with the harness plugin"
            )


# A record's size when the results directory holds none to measure. Measured: tiny-llama on hf, 3 rounds
# x 16 tokens and a 2-prompt gate, is 11.8 KB, ~14 bytes a token gap; 5 launches x 10 rounds x 256
# tokens (180 KB of gaps) with a 16-prompt gate stays under this.
RECORD_BYTES = 512 * 2**10


def check_free_space(results_dir: str | Path, points: int, what: str = "--results") -> None:
    """Refuse, before a sweep of ``points`` points, a results directory whose file system has less room
    than their records: each estimated as the mean size of the records already there, else
    ``RECORD_BYTES``. A ``WriteFailed`` (exit 2) naming the directory, the free and the needed space."""
    import shutil

    from harness.errors import WriteFailed
    from harness.io import first_existing

    directory = Path(results_dir)
    sizes = [file.stat().st_size for file, _ in _json_files([directory])] if directory.is_dir() else []
    each = sum(sizes) // len(sizes) if sizes else RECORD_BYTES
    need, free = points * each, shutil.disk_usage(first_existing(directory)).free
    if need > free:
        estimate = f"the mean of the {len(sizes)} record(s) there" if sizes else "none there to measure"
        raise WriteFailed(
            f"{what} {directory}",
            f"{_mib(free)} free, {points} point(s) need about {_mib(need)} ({_mib(each)} a record: {estimate})",
            "nothing ran",
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def row(record: Record, path: Optional[Path] = None) -> dict:
    """``columns.flatten(record)`` plus the file it came from."""
    return {**flatten(record), "path": None if path is None else str(path)}


def frame(pairs: Iterable[tuple[Optional[Path], Record]]):
    """A DataFrame with one ``row`` per (path, record) pair."""
    import pandas as pd

    return pd.DataFrame([row(record, path) for path, record in pairs])


def load(paths: str | Path | Iterable[str | Path]):
    """Records under ``paths`` (files or directories) as a DataFrame: one row per point (``timing_view``: the
    run record where a point also has a gate-only one).

    Columns: scenario, point_id, status, reason, each axis, each metric, the gate's summary
    (``gate_*``), model name and checksum, engine and version, host, and ``path``.
    """
    return frame(timing_view(iter_records(paths)))
