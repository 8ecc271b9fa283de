"""The on-disk kernel cache.

Each compiled configuration lives in ``<cache>/<key>/`` (the input MLIR, the
PTX and manifest files, and ``fa_opt.json`` describing them). The key is the
SHA-256 of everything that affects the code: the attention config, the
pipeline and its options, the fa-opt binary (content hash and ``--version``,
which names the LLVM/MLIR it runs on), the package version and the cache
format. An entry is written into a temporary folder and renamed into place,
so readers never see half an entry and concurrent compiles are safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Optional

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


def lookup(key: str, root: Optional[str] = None) -> Optional[dict]:
    """The ``fa_opt.json`` of a complete entry, or None."""
    path = os.path.join(entry_dir(key, root), ENTRY_FILE)
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def new_staging_dir(root: Optional[str] = None) -> str:
    """A fresh folder next to the entries (same file system: rename works)."""
    given = root
    root = root or cache_dir()
    try:
        os.makedirs(root, exist_ok=True)
        return tempfile.mkdtemp(prefix=".staging-", dir=root)
    except OSError as err:
        # Name the folder and where it came from, not only the errno.
        what = "the cache folder" if given else (
            "the cache folder ($FA_OPT_CACHE_DIR)"
            if os.environ.get("FA_OPT_CACHE_DIR") else
            "the cache folder (~/.cache/fa_opt; set $FA_OPT_CACHE_DIR)")
        raise OSError(err.errno, f"cannot write {what} '{root}': "
                      f"{err.strerror or err}") from err


def publish(staging: str, key: str, entry: dict,
            root: Optional[str] = None) -> str:
    """Writes ``fa_opt.json`` into ``staging`` and renames it to the entry
    folder. If another process published the key first, keeps theirs."""
    with open(os.path.join(staging, ENTRY_FILE), "w", encoding="utf-8") as f:
        json.dump(entry, f, indent=1, sort_keys=True)
        f.write("\n")
    final = entry_dir(key, root)
    try:
        os.rename(staging, final)
    except OSError:
        if lookup(key, root) is None:
            raise
        shutil.rmtree(staging, ignore_errors=True)
    return final
