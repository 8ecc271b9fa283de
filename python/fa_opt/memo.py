"""A bounded in-memory memo for the launch path's per-call work (encoded
tensor maps, prepared launches, input checks, kernel views, configs)."""

from __future__ import annotations

import threading
from typing import Callable, Dict, Hashable, Iterator

_MISSING = object()


class BoundedMemo:
    """A dict of at most ``limit`` entries; inserting into a full one drops
    the oldest entry first. Reads take no lock (one dict read each);
    inserts and clears do, so concurrent inserts never drop an entry
    twice or raise."""

    def __init__(self, limit: int):
        self.limit = limit
        self._entries: Dict[Hashable, object] = {}
        self._lock = threading.Lock()

    def get(self, key, default=None):
        return self._entries.get(key, default)

    def get_or_make(self, key, make: Callable[[], object]):
        """The value under ``key``, else ``make()`` stored under it (None
        included). Nothing is stored when ``make`` raises."""
        value = self._entries.get(key, _MISSING)
        if value is _MISSING:
            value = self.put(key, make())
        return value

    def put(self, key, value):
        """Stores ``value`` under ``key`` and returns it."""
        with self._lock:
            if key not in self._entries:
                while self._entries and len(self._entries) >= self.limit:
                    self._entries.pop(next(iter(self._entries)))
            self._entries[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator:
        """The keys, oldest first."""
        return iter(list(self._entries))
