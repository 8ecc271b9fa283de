"""The on-disk kernel cache.

Each compiled configuration lives in ``<cache>/<key>/`` (the input MLIR, the
PTX and manifest files, and ``fa_opt.json`` describing them). The key is the
SHA-256 of everything that affects the code: the attention config, the
pipeline and its options, the fa-opt binary (content hash and ``--version``,
which names the LLVM/MLIR it runs on), the package version and the cache
format. An entry is written into a temporary folder and renamed into place,
so readers never see half an entry and concurrent compiles are safe. An
entry that a ``check`` finds broken (a file deleted or truncated by hand, a
disk that filled up) is moved aside and removed, and the key is compiled
again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import secrets
from typing import Callable, Optional

#: Bumped when the layout of an entry changes.
CACHE_FORMAT = 1
#: The description file of an entry (also marks a precompiled folder).
ENTRY_FILE = "fa_opt.json"


def cache_dir() -> str:
    """``$FA_OPT_CACHE_DIR``, else ``~/.cache/fa_opt``."""
    path = os.environ.get("FA_OPT_CACHE_DIR")
    if not path:
        path = os.path.join(os.path.expanduser("~"), ".cache", "fa_opt")
    return path


def canonical_json(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def cache_key(material: dict) -> str:
    """SHA-256 (hex) of the canonical JSON of ``material``."""
    return hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


def entry_dir(key: str, root: Optional[str] = None) -> str:
    return os.path.join(root or cache_dir(), key)


#: ``check(directory, entry)``: None for a usable entry, else why not.
Check = Callable[[str, object], Optional[str]]


def _read_entry(directory: str):
    """The parsed ``fa_opt.json`` of ``directory``, or None (missing,
    unreadable or not JSON)."""
    try:
        with open(os.path.join(directory, ENTRY_FILE), "r",
                  encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def lookup(key: str, root: Optional[str] = None,
           check: Optional[Check] = None) -> Optional[dict]:
    """The ``fa_opt.json`` of a complete entry, or None: missing, not
    readable as JSON, or (with ``check``) found broken by it."""
    directory = entry_dir(key, root)
    entry = _read_entry(directory)
    if entry is None or (check is not None
                         and check(directory, entry) is not None):
        return None
    return entry


def _sibling_dir(parent: str, prefix: str) -> str:
    """A new folder ``parent/<prefix><random>``, created with the mode the
    umask gives (other users of a shared folder can read what lands
    there; tempfile.mkdtemp would make it 0700)."""
    while True:
        path = os.path.join(parent, prefix + secrets.token_hex(8))
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue


def new_staging_dir(root: Optional[str] = None) -> str:
    """A fresh folder next to the entries (same file system: rename works)."""
    given = root
    root = root or cache_dir()
    try:
        os.makedirs(root, exist_ok=True)
        return _sibling_dir(root, ".staging-")
    except OSError as err:
        # Name the folder and where it came from, not only the errno.
        what = "the cache folder" if given else (
            "the cache folder ($FA_OPT_CACHE_DIR)"
            if os.environ.get("FA_OPT_CACHE_DIR") else
            "the cache folder (~/.cache/fa_opt; set $FA_OPT_CACHE_DIR)")
        raise OSError(err.errno, f"cannot write {what} '{root}': "
                      f"{err.strerror or err}") from err


def discard(directory: str, check: Optional[Check] = None) -> None:
    """Removes a broken entry folder: first renamed aside (atomic, so a
    concurrent reader sees the entry or nothing, and a concurrent discard
    of the same folder is harmless), then deleted. If what was renamed
    aside turns out usable (another process installed a good entry between
    the caller's check and the rename), it is put back instead."""
    aside = directory.rstrip(os.sep) + ".broken-" + secrets.token_hex(8)
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    entry = _read_entry(aside)
    if entry is not None and (check is None or check(aside, entry) is None):
        try:
            os.rename(aside, directory)
            return
        except OSError:
            pass  # another entry took the place meanwhile
    shutil.rmtree(aside, ignore_errors=True)


def install(staging: str, final: str, check: Optional[Check] = None) -> str:
    """Renames the complete folder ``staging`` to ``final``. If ``final``
    exists and is usable (readable ``fa_opt.json`` that ``check`` accepts),
    keeps it (another process got there first) and removes ``staging``; if
    it exists but is broken, replaces it. Returns ``final``."""
    for _ in range(3):
        try:
            os.rename(staging, final)
            return final
        except OSError:
            if not os.path.isdir(final):
                raise
        entry = _read_entry(final)
        if entry is not None and (check is None
                                  or check(final, entry) is None):
            shutil.rmtree(staging, ignore_errors=True)
            return final
        discard(final, check)
    raise OSError(f"cannot install '{staging}' as '{final}': the folder "
                  f"keeps coming back broken")


def publish(staging: str, key: str, entry: dict,
            root: Optional[str] = None, check: Optional[Check] = None) -> str:
    """Writes ``fa_opt.json`` into ``staging`` and renames it to the entry
    folder. If another process published a usable entry of the key first,
    keeps theirs; a broken one (see ``check``) is replaced."""
    with open(os.path.join(staging, ENTRY_FILE), "w", encoding="utf-8") as f:
        json.dump(entry, f, indent=1, sort_keys=True)
        f.write("\n")
    return install(staging, entry_dir(key, root), check)
