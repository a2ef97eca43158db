"""A tiny progress bar on stderr (no dependency)."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Progress of ``total`` units, redrawn at most every ``interval`` seconds.

    :param enabled: draw anything at all (off for non-terminals and workers).
    :param unit: what is counted (``msgs``, ``bags``).
    """

    def __init__(self, total: int, label: str, enabled: bool = True,
                 stream: TextIO | None = None, interval: float = 0.2,
                 unit: str = 'msgs') -> None:
        self.unit = unit
        self.total = max(int(total), 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.interval = interval
        self.done = 0
        self._start = time.monotonic()
        self._last = 0.0

    def update(self, amount: int) -> None:
        """Advance by ``amount`` units."""
        self.done += amount
        now = time.monotonic()
        if self.enabled and now - self._last >= self.interval:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(self.done / self.total, 1.0)
        width = 30
        bar = '#' * int(frac * width) + '-' * (width - int(frac * width))
        elapsed = now - self._start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - self.done) / rate if rate > 0 else 0.0
        self.stream.write(f'\r{self.label} [{bar}] {frac * 100:5.1f}% '
                          f'{self.done}/{self.total} {self.unit}, {elapsed:6.1f} s, '
                          f'eta {eta:5.0f} s')
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled:
            self.done = max(self.done, 0)
            self._draw(time.monotonic())
            self.stream.write('\n')
            self.stream.flush()
