"""WhiteNoise's table of static files, built once per test process.

Django's test client builds the whole middleware chain for each client, and WhiteNoise reads and stats
every static file (finders and ``STATIC_ROOT``, about 400 files) each time it is built: 41 ms a client
here, about two in five of the CPU of a run of tests/banks/api under cProfile. A server builds its
middleware once per process, so the product keeps WhiteNoise as it is; the test settings name this
subclass instead, which builds each table once and hands the same responders to every later client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from whitenoise.middleware import WhiteNoiseMiddleware

# (what was scanned) -> {url: responder}: the files one scan added or replaced.
_tables: dict[tuple[str, str | None, str | None], dict[str, Any]] = {}


class WhiteNoiseOncePerProcess(WhiteNoiseMiddleware):
    def _add_table(self, key: tuple[str, str | None, str | None], scan: Callable[[], None]) -> None:
        table = _tables.get(key)
        if table is None:
            before = dict(self.files)
            scan()
            # What the scan added or replaced (finders' files win over STATIC_ROOT's, as in a server).
            _tables[key] = {url: found for url, found in self.files.items() if before.get(url) is not found}
        else:
            self.files.update(table)

    def add_files(self, root: str, prefix: str | None = None) -> None:
        if self.autorefresh:  # nothing is scanned up front: the files are looked for at each request
            super().add_files(root, prefix)
            return
        self._add_table(("root", str(root), prefix), lambda: super(WhiteNoiseOncePerProcess, self).add_files(root, prefix))

    def add_files_from_finders(self) -> None:
        self._add_table(("finders", None, self.static_prefix), super().add_files_from_finders)
