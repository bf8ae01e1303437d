"""Run directories and atomic file writes.

A run directory (``runs/<system>-<verb>-<UTC timestamp>/`` unless ``--out`` is given) holds
``config.json``, ``metrics.csv``, ``summary.json``, ``plots/``, ``media/`` and ``checkpoints/``.
Every file is written to a temporary name in the same folder and renamed into place, so a crash
mid-write leaves the previous version intact.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from animat import interrupt, strict_json
from animat.config import run_record_keys
from animat.errors import CheckpointError, ConfigError, RunDirError


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file + fsync + rename + fsync of the folder; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX: the directory entry itself is flushed); a no-op where
    directories cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _jsonable(obj: Any) -> Any:
    """NumPy values, paths, tuples and sets as JSON's types (for :func:`json.dumps`'s ``default``)."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (tuple, set)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def atomic_write_json(path: str | os.PathLike, obj: Any, *, exact: bool = False) -> Path:
    """``obj`` as indented JSON with sorted keys, atomically: strict JSON (:mod:`animat.strict_json`: a NaN or
    an infinity is written ``null``); with ``exact``, Python's JSON, whose ``NaN`` and ``Infinity`` read back as
    themselves (a checkpoint's manifest, which must resume bit for bit, and nothing meant for other readers)."""
    if exact:
        text = json.dumps(obj, indent=2, sort_keys=True, default=_jsonable)
    else:
        text = strict_json.dumps(obj, indent=2, sort_keys=True)
    return atomic_write_text(path, text + "\n")


def atomic_write_csv(path: str | os.PathLike, rows: Iterable[Mapping[str, Any]], fields: list[str]) -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in fields})
    return atomic_write_text(path, buf.getvalue())


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """The bytes of an uncompressed ``.npz`` holding ``arrays``."""
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_csv(path: str | os.PathLike) -> list[dict[str, str]]:
    """The rows of a CSV file with a header, as strings ([] if the file does not exist)."""
    if not Path(path).is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def atomic_save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    """Save arrays as an uncompressed ``.npz`` atomically."""
    return atomic_write_bytes(path, npz_bytes(arrays))


def read_npz(
    path: str | os.PathLike,
    *,
    data: bytes | None = None,
    keys: Iterable[str] = (),
    what: str = "npz file",
    error: type[Exception] = CheckpointError,
) -> dict[str, np.ndarray]:
    """All arrays of the ``.npz`` file ``path`` (or of its bytes ``data``, already read), never unpickling.
    A file that is missing, truncated, not an npz archive, or lacks one of ``keys`` raises ``error``
    in one line that names it as ``what``."""
    try:
        z = np.load(io.BytesIO(data) if data is not None else path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a single .npy array, not an .npz archive")
        with z:
            arrays = {k: z[k] for k in z.files}
        bad = [k for k, v in arrays.items() if not isinstance(v, np.ndarray)]  # a member that is not an .npy: raw bytes
        if bad:
            raise ValueError(f"member {bad[0]!r} is not an array")
    except (OSError, ValueError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise error(f"cannot read {what} {str(path)!r} ({first})") from None
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise error(f"{what} {str(path)!r} lacks the array(s) {', '.join(missing)}")
    return arrays


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def read_run_config(run_dir: str | os.PathLike, what: str = "an animat run directory") -> dict:
    """``run_dir/config.json`` as a dict; CheckpointError (one line) when it is missing, not JSON or not
    a table. ``what`` names the kind of directory expected, for the message."""
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{str(run_dir)!r} holds no config.json; is it {what}?")
    try:
        stored = read_json(path)
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{str(path)!r} is corrupt ({exc})") from None
    if not isinstance(stored, dict):
        raise CheckpointError(f"{str(path)!r} is corrupt (not a JSON object)")
    return stored


def utc_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def check_out(out: str | os.PathLike) -> Path:
    """``out`` as a Path if :func:`new_run_dir` may make it the run directory (absent, or an empty folder),
    else RunDirError (one line); creates nothing, so a verb can check it before long work."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"output directory {str(path)!r} is an existing file; choose another --out")
    if path.exists() and any(path.iterdir()):
        raise RunDirError(f"output directory {str(path)!r} already exists and is not empty; choose another --out")
    return path


def new_run_dir(system: str, verb: str, out: str | os.PathLike | None = None, root: str | os.PathLike = "runs") -> Path:
    """Create a fresh run directory; never reuse one that already holds files.

    ``out`` names the folder explicitly; it may exist only if empty. Without it the folder is
    ``<root>/<system>-<verb>-<UTC timestamp>`` (with a numeric suffix if that exists already).
    A signal received before (:func:`animat.interrupt.check`) stops it with nothing made.
    """
    interrupt.check()
    if out is not None:
        path = check_out(out)
        path.mkdir(parents=True, exist_ok=True)
        return path
    base = Path(root) / f"{system}-{verb}-{utc_stamp()}"
    path, n = base, 1
    while True:
        try:
            path.mkdir(parents=True, exist_ok=False)
            return path
        except FileExistsError:
            n += 1
            path = base.with_name(f"{base.name}-{n}")


def start_or_resume(
    system: str,
    config_cls,
    *,
    resume: Path | None,
    config: Path | None,
    out: Path | None,
    options: dict[str, Any],
    may_change: dict[str, str],
):
    """``(config, run_dir)`` for ``animat SYSTEM train``: a new run directory for ``config`` + ``options``;
    or, with ``resume``, that run's own ``config.json`` where only the options named in ``may_change``
    (option key -> flag shown to the user) may be given (an option repeated with the run's own value is no
    change: the first command line, with --resume added, continues the run). ``config_cls.build(file, **options)``
    resolves; :func:`animat.config.run_record_keys` names the keys a run's config.json holds besides the config's
    fields; ``config_cls.OLD_DEFAULTS`` (if any) gives the values of options whose default changed, for a run whose
    config.json predates them (it ran with that value)."""
    if resume is None:
        return config_cls.build(config, **options), new_run_dir(system, "train", out)
    resume = Path(resume)
    stored = read_run_config(resume, f"a {system} training run directory (--resume)")
    changed = [k for k, v in options.items() if v is not None and k not in may_change and stored.get(k, object()) != v]
    if config is not None or out is not None or changed:
        raise ConfigError(
            f"--resume continues a run with its own config; only {', '.join(may_change.values())} may change"
            + (f" (this call changes {', '.join(changed)})" if changed else "")
        )
    unknown = foreign_keys(stored, config_cls)
    if unknown:
        raise CheckpointError(
            f"--resume {str(resume)!r}: its config.json is not a {system} training config (it sets "
            f"{', '.join(unknown[:4])}{', ...' if len(unknown) > 4 else ''}); is it another system's run?"
        )
    return config_cls.build(
        None,
        **{**getattr(config_cls, "OLD_DEFAULTS", {}), **stored, **{k: v for k, v in options.items() if v is not None}},
    ), resume


def foreign_keys(stored: Mapping[str, Any], config_cls) -> list[str]:
    """The keys of a run's ``config.json`` (``stored``) that are neither fields of ``config_cls`` nor what a run
    records besides them (:func:`animat.config.run_record_keys`: the system and verb that wrote it, its
    ``RUN_RECORD``), sorted: any at all, and the run is not one of ``config_cls``'s (another system's or verb's)."""
    return sorted(set(stored) - {f.name for f in fields(config_cls)} - set(run_record_keys(config_cls)))


def config_record(system: str, verb: str, options: Any) -> dict[str, Any]:
    """What a new run's ``config.json`` holds: who wrote it (``system``, ``verb``: :data:`animat.config.RUN_IDENTITY`)
    and its resolved ``options`` (a dataclass instance; a preset's options name the ``preset``). A run directory
    written before these were recorded is recognised by its options alone, as before."""
    return {"system": system, "verb": verb, **asdict(options)}


def unstarted(run_dir: str | os.PathLike, pointer: str | os.PathLike) -> bool:
    """Whether ``--resume`` starts run directory ``run_dir`` again from its config.json: the run stopped before its
    first checkpoint (there is no ``pointer``, the checkpoint pointer's path inside it) and holds no summary.json
    (a finished run whose checkpoints are gone is no such run: its ``--resume`` is refused)."""
    run_dir = Path(run_dir)
    return not (run_dir / pointer).is_file() and not (run_dir / "summary.json").is_file()


def refuse_finished(run_dir: str | os.PathLike, done: int, total: int, unit: str, option: str) -> None:
    """``--resume`` of a run at its ``total`` ``unit`` (generations, epochs, timesteps) that wrote its
    ``summary.json`` has nothing to do: refused in one line that says how to continue it (``option``).
    A run at its total without ``summary.json`` (a crash before the outputs) passes: resuming writes them."""
    if int(done) >= int(total) and (Path(run_dir) / "summary.json").is_file():
        raise RunDirError(
            f"run {str(run_dir)!r} already finished its {int(done)} {unit}; pass {option} > {int(done)} to continue it"
        )
