"""Config files that write to one storage folder, so that none prunes the others' sources.

A write of the index prunes every source its config does not list (a source removed from the config
goes with its rows and local state). Two config files with the same ``storage:`` (a team's and a
personal one, staging and production) then deleted each other's sources, clones and caches on every
ingest, and each one's sensor deleted the other's Dagster partitions. Each config that writes to a
storage folder is recorded in ``<storage>/configs.json``; a source that another recorded config file
still lists, for the same storage folder, is kept. A config file deleted, moved, or pointed at
another storage no longer protects anything, so its sources are pruned as before. A recorded file
that is there but cannot be read (a YAML typo, a half-written save, no permission) lists what nobody
can tell: :func:`sources_of_other_configs` raises :class:`SiblingConfigUnreadable`, and its callers
prune nothing that run.

Which Dagster ``sources`` partitions are this storage's: those of a source whose state folder
``<storage>/sources/<name>`` is here, and those this storage's sensor, ingest or ``refresh_all_sources``
run added, recorded in ``<storage>/partitions.json`` before they are added (a source removed from the
config before its first scan has no state folder, and kept its partition forever).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .config import Config, ConfigError, load_config
from .files import atomic_write

REGISTRY = "configs.json"
#: the ``sources`` partitions this storage added (beside ``configs.json``, not under ``sources/``)
ADDED_PARTITIONS = "partitions.json"


class SiblingConfigUnreadable(ConfigError):
    """Another config file recorded for this storage folder is there but cannot be read: which
    sources it lists is unknown, so no source this config does not list may be pruned."""


def _registry(storage: Path) -> dict[str, float]:
    try:
        raw = json.loads((storage / REGISTRY).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, (int, float))} \
        if isinstance(raw, dict) else {}


def register(config: Config) -> None:
    """Record that ``config``'s file writes to its storage folder (call under the writer lock)."""
    if config.path is None or not config.storage_is_local:
        return
    storage = Path(config.storage_path)
    entries = _registry(storage)
    entries[str(Path(config.path).resolve())] = time.time()
    try:
        atomic_write(storage / REGISTRY, json.dumps(dict(sorted(entries.items())), indent=1).encode())
    except OSError:  # a registry that cannot be written protects less; it never fails a write
        pass


def sources_of_other_configs(config: Config) -> dict[str, Path]:
    """Source name → the other config file that lists it and writes to the same storage folder.
    Raises :class:`SiblingConfigUnreadable` when a recorded config file is there but cannot be read."""
    if not config.storage_is_local:
        return {}
    storage = Path(config.storage_path).resolve()
    mine = Path(config.path).resolve() if config.path else None
    out: dict[str, Path] = {}
    broken: list[str] = []
    for path in sorted(_registry(storage)):
        p = Path(path)
        if p == mine or not p.is_file():  # deleted or moved: it protects nothing any more
            continue
        try:
            other = load_config(p)
        except (ConfigError, OSError, ValueError) as exc:  # there, but what it lists is unknown
            why = " ".join(str(exc).split())
            broken.append(why if str(p) in why else f"{p}: {why}")
            continue
        if not other.storage_is_local or Path(other.storage_path).resolve() != storage:
            continue
        for s in other.sources:
            out.setdefault(s.name, p)
    if broken:
        raise SiblingConfigUnreadable(
            f"another config file that writes to the storage folder {storage} cannot be read ({'; '.join(broken)[:600]}), "
            "so which sources it lists is unknown and no source is pruned; fix that file, or delete it or point "
            "its storage elsewhere if it is no longer used")
    return out


def _added_partitions(storage: Path) -> set[str]:
    try:
        raw = json.loads((storage / ADDED_PARTITIONS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {n for n in raw if isinstance(n, str)} if isinstance(raw, list) else set()


def _update_added_partitions(storage: Path, add: set[str] = frozenset(), drop: set[str] = frozenset()) -> None:
    """Add ``add`` to and take ``drop`` from the recorded partitions, under a lock of their own (the
    sensor and an ingest may add at the same moment). Best effort: a record that cannot be written
    leaves a partition of a source removed before its first scan to delete by hand, it fails nothing."""
    from .locks import LockTimeout, hold

    try:
        with hold(storage, "partitions", purpose="record the source partitions it adds", timeout=60):
            before = _added_partitions(storage)
            after = (before | set(add)) - set(drop)
            if after != before:
                atomic_write(storage / ADDED_PARTITIONS, json.dumps(sorted(after), indent=1).encode())
    except (OSError, ConfigError, LockTimeout):
        pass


def record_added_partitions(config: Config, names: list[str]) -> None:
    """Record that this storage adds the ``sources`` partitions ``names`` (call before adding them),
    so that :func:`removable_partitions` counts them as this storage's before their source has a state
    folder. For an object-store storage the record goes where the state folders are, ``storage_path``."""
    if names:
        _update_added_partitions(Path(config.storage_path), add=set(names))


def removable_partitions(config: Config, existing: list[str]) -> list[str]:
    """Of the Dagster partitions ``existing``, those of sources this storage held (their state folder
    ``<storage>/sources/<name>`` is here, or this storage added the partition:
    :func:`record_added_partitions`) that neither ``config`` nor another config file of the same
    storage lists: a Dagster home may be shared by projects with other storage, whose partitions are
    theirs. A recorded partition that is gone (deleted by the caller's last call, or from the UI) and
    that no config of this storage lists is taken off the record, so that a partition of that name
    another project adds later stays its own. Raises :class:`SiblingConfigUnreadable` as
    :func:`sources_of_other_configs` does."""
    configured = {s.name for s in config.sources}
    storage = Path(config.storage_path)
    added = _added_partitions(storage)
    gone = [n for n in existing if n not in configured]
    stale = added - set(existing) - configured
    if not gone and not stale:
        return []
    others = sources_of_other_configs(config)
    if stale - set(others):
        _update_added_partitions(storage, drop=stale - set(others))
    state_root = storage / "sources"
    return [n for n in gone if n not in others and (n in added or (state_root / n).is_dir())]
