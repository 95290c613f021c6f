"""Input discovery: which files a command reads, and how each is named in the lake."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.sources.inspect.extract import is_inspect_index
from pipeline.storage.lake import InputError, lake_sign

# .eval: Inspect AI logs (a .json file may be one too: told apart by its first bytes).
INPUT_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".eval")


@dataclass(frozen=True)
class Inputs:
    """The files to read, and a note for each path skipped unread."""

    files: list[Path]
    skipped: list[str]


def _skip_note(path: Path, why: str) -> str:
    return f"{path}: {why}, skipped unread (only regular files inside the input folder are read)"


# Ends every note of a lake left out of the inputs (how the CLI finds them among notes).
LAKE_SKIPPED = "skipped unread (no INPUT yields the files of a lake)"


def own_lake_note(folder: Path, *, inside: bool = False) -> str:
    """The note for the lake the command writes to (or a folder inside it), left unread."""
    what = "inside the lake --lake names" if inside else "the lake --lake names"
    return f"{folder}: {what}, {LAKE_SKIPPED}"


def _lake_skipped(folder: Path, own: Path | None) -> str | None:
    """The note for ``folder`` when it is a lake (the one the command writes, or any other),
    else None.

    A lake's state, manifests and score inputs are JSON: read as input, each would be
    quarantined as a bad record, and the nightly would find them changed (so new) every night.
    """
    where = folder.resolve()
    if own is not None and where.is_relative_to(own):
        return own_lake_note(folder, inside=where != own)
    sign = lake_sign(folder)
    if sign is None:
        return None
    return f"{folder}: a lake (it holds {sign}), {LAKE_SKIPPED}"


def _inside_lake(item: Path, own: Path | None, signs: dict[Path, str | None]) -> str | None:
    """The note for an input (a folder or a file) that lies inside a lake, naming the lake (the
    one the command writes, or the nearest folder above it that is one), else None.

    Each folder above it up to the root is looked at once per scan (``signs``, by folder): a
    few stat calls each. A folder the system will not let us look into is no lake we know of.
    """
    where = item.resolve()
    if own is not None and where != own and where.is_relative_to(own):
        return own_lake_note(item, inside=True)
    for folder in where.parents:
        if folder not in signs:
            signs[folder] = lake_sign(folder)
        sign = signs[folder]
        if sign is not None:
            return f"{item}: inside the lake {folder} (it holds {sign}), {LAKE_SKIPPED}"
    return None


def _scan_folder(folder: Path, own: Path | None) -> Inputs:
    """Regular input files below ``folder`` whose real path lies inside it; links never followed,
    and the indexes Inspect's eval_set writes beside its logs left out (they are no logs), and
    so are lakes (the ``own`` one, where the command writes, and any other) with all below them.

    A link in an inbox could otherwise copy any file the pipeline's user can read
    into the quarantine, where every analyst reads it.
    """
    root = folder.resolve()
    files: list[Path] = []
    skipped: list[str] = []
    lake = _lake_skipped(folder, own)
    if lake is not None:
        return Inputs(files=[], skipped=[lake])

    def unlisted(exc: OSError) -> None:
        # A folder the system will not let us list holds files we cannot name: say so.
        why = f"could not be listed ({exc.strerror or exc})"
        skipped.append(_skip_note(Path(exc.filename or folder), why))

    for top, dirs, names in os.walk(folder, onerror=unlisted):
        here = Path(top)
        walked = []
        for name in sorted(dirs):
            if (here / name).is_symlink():
                skipped.append(_skip_note(here / name, "a symbolic link to a folder"))
            elif own is not None and (here / name).resolve() == own:
                # The lake written to, in its own inbox: left out without a word, which the
                # nightly would say again every night.
                continue
            elif (lake := _lake_skipped(here / name, own)) is not None:
                skipped.append(lake)
            else:
                walked.append(name)
        # os.walk descends into what is left in ``dirs`` (links it never follows).
        dirs[:] = walked
        for name in names:
            path = here / name
            if path.is_symlink():
                skipped.append(_skip_note(path, "a symbolic link"))
            elif not name.endswith(INPUT_SUFFIXES):
                continue
            elif not path.is_file():
                skipped.append(_skip_note(path, "not a regular file"))
            elif not path.resolve().is_relative_to(root):
                skipped.append(_skip_note(path, "its real path lies outside the folder"))
            elif is_inspect_index(path):
                skipped.append(f"{path}: the index Inspect's eval_set keeps of its logs, skipped")
            else:
                files.append(path)
    return Inputs(files=sorted(files), skipped=sorted(skipped))


def source_name(path: Path) -> str:
    """How a file is named in the lake: by where it is, not by how it was spelled.

    ``x.jsonl``, ``./d/../x.jsonl`` and ``/abs/x.jsonl`` are one file, so its lines
    are one set of lines: a bad line read again is "seen".
    """
    return str(path.resolve())


def scan_inputs(
    inputs: Sequence[Path], lake: Path | None = None, *, discovered: bool = False
) -> Inputs:
    """Files as given; directories as every input file below them, in sorted order.

    Symbolic links (given, or met in a folder) and anything else that is not a regular file
    or a folder are skipped with a note, never read. Each file is resolved, and named once
    however many inputs name it; a folder gives no file of a lake (the ``lake`` written to,
    or any other: a copied lake in an inbox), each lake left out with a note; an input (a
    folder or a file) inside a lake is left out whole, with a note naming the lake (a lake's
    state, manifests and score inputs are JSON, each quarantined as a bad record if read); a
    file beside a lake is read. An input that does not exist is refused, unless the
    inputs were ``discovered`` by a scan of this command (a nightly's inbox): one gone
    since is read, and quarantined whole as unreadable, like a file that vanishes later.
    """
    own = lake.resolve() if lake is not None else None
    files: list[Path] = []
    skipped: list[str] = []
    signs: dict[Path, str | None] = {}
    for item in inputs:
        if item.is_symlink():
            skipped.append(_skip_note(item, "a symbolic link"))
        elif (inside := _inside_lake(item, own, signs)) is not None:
            skipped.append(inside)
        elif item.is_dir():
            found = _scan_folder(item, own)
            files.extend(f.resolve() for f in found.files)
            skipped.extend(found.skipped)
        elif item.is_file() or (discovered and not item.exists()):
            files.append(item.resolve())
        elif item.exists():
            skipped.append(_skip_note(item, "not a regular file"))
        else:
            raise InputError(f"no such input: {item}")
    return Inputs(files=list(dict.fromkeys(files)), skipped=skipped)


def expand_inputs(inputs: Sequence[Path], lake: Path | None = None) -> list[Path]:
    """The files ``scan_inputs`` would read (its notes aside)."""
    return scan_inputs(inputs, lake).files
