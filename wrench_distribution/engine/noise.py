"""Each sensor's noise and resolution, learned from its healthy readings (no ROS).

Second differences of readings not frozen or out of range fill a block of :data:`~.NOISE_BLOCK` per
sensor; a full block gives a noise estimate per axis (:func:`~.core.health.block_noise`) and
the smallest non-zero second difference (the readings' quantisation step, or less); the noise
in use is the median of the last :data:`~.NOISE_BLOCKS` estimates (a block hit by a burst
does not move it), the resolution the smallest seen. Each estimate is kept with the reading
it came with, so that a chunk of readings can ask what the noise was at any of them.
"""
from bisect import bisect_right
from collections import deque
from itertools import chain

import numpy as np

from wrench_distribution.core.health import block_noise, NOISE_BLOCK, NOISE_BLOCKS, SPIKE_Z


class NoiseLearner:
    """The noise of n sensors.

    :param n: number of sensors.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        #: noise standard deviation per axis (sensor frame), NaN until a block is complete
        self.noise = np.full((n, 6), np.nan)
        #: smallest non-zero second difference per axis, inf until a block is complete
        self.resolution = np.full((n, 6), np.inf)
        #: blocks completed per sensor
        self.blocks = np.zeros(n, np.int64)
        #: noise estimates made, all sensors (changes whenever :attr:`noise` does)
        self.estimates = 0
        self._scale = np.full((n, 6), np.inf)
        self._block = np.zeros((n, NOISE_BLOCK, 6))
        self._filled = [0] * n  # second differences written into each sensor's block
        self._shared: list = []  # readings in a row added live to every sensor, not yet written
        self._room = NOISE_BLOCK  # rows the fullest block takes before it closes
        self._estimates = [deque(maxlen=NOISE_BLOCKS) for _ in range(n)]
        #: (6 n) list: a jump from one reading to the next beyond which a spike may begin
        self.jump = [float('inf')] * (6 * n)
        #: ``(reading index, noise, scale)`` of each estimate since :meth:`forget_before`
        self.changes: list = []
        self._before = (self.noise.copy(), self._scale.copy())  # before the first change kept
        self._indices: list = []  # the changes' reading indices

    @property
    def learned(self) -> np.ndarray:
        """(n,) whether each sensor's noise is known."""
        return self.blocks > 0

    @property
    def scale(self) -> np.ndarray:
        """Return each axis's spread about its neighbours: ``sqrt(1.5) sigma``, at least the resolution.

        (n, 6), the spread of a reading about its neighbours' mean; inf until learned, or where an
        axis never moved.
        """
        return self._scale

    def add(self, second: np.ndarray, healthy: np.ndarray, readings: np.ndarray) -> None:
        """Add second differences (c, n, 6) where ``healthy`` (c, n).

        :param readings: (c,) index of the reading each came with (the estimate's time).
        """
        self._write_shared()
        for i in range(self.n):
            rows = np.flatnonzero(healthy[:, i])
            values = second[rows, i]
            while len(values):
                filled = self._filled[i]
                take = values[:NOISE_BLOCK - filled]
                self._block[i, filled:filled + len(take)] = take
                self._filled[i] = filled + len(take)
                values = values[len(take):]
                if self._filled[i] == NOISE_BLOCK:
                    self._close(i, int(readings[rows[len(rows) - len(values) - 1]]))
        self._room = NOISE_BLOCK - max(self._filled)

    def add_row(self, before: list, centre: list, after: list, reading: int) -> None:
        """Add the second difference of three readings in a row, every sensor (flat lists of 6 n).

        Consecutive readings wait in one list; their second differences are formed as
        :meth:`add`'s callers form them (``before - 2 centre + after``) and written into the
        blocks when the fullest one fills.

        :param reading: index of the reading ``after`` (the estimate's time).
        """
        shared = self._shared
        if not shared or centre is not shared[-1]:  # not the reading after the last one added
            self._write_shared()
            shared += [before, centre]
        shared.append(after)
        if len(shared) - 2 < self._room:
            return
        self._write_shared()
        for i in range(self.n):
            if self._filled[i] == NOISE_BLOCK:
                self._close(i, reading)
        self._room = NOISE_BLOCK - max(self._filled)

    def _write_shared(self) -> None:
        """Write the second differences of the readings added to every sensor into their blocks."""
        shared = self._shared
        if shared:
            rows = np.fromiter(chain.from_iterable(shared), float, len(shared) * 6 * self.n)
            rows = rows.reshape(len(shared), self.n, 6)
            second = rows[:-2] - 2.0 * rows[1:-1] + rows[2:]
            for i in range(self.n):
                filled = self._filled[i]
                self._block[i, filled:filled + len(second)] = second[:, i]
                self._filled[i] = filled + len(second)
            shared.clear()
            self._room = NOISE_BLOCK - max(self._filled)

    def noise_at(self, reading: int) -> np.ndarray:
        """Return the noise (n, 6) in use after ``reading`` (NaN where not learned yet)."""
        return self._at(reading)[0]

    def scale_at(self, reading: int) -> np.ndarray:
        """Return the spread (n, 6) in use after ``reading`` (:attr:`scale`)."""
        return self._at(reading)[1]

    def _at(self, reading: int) -> tuple:
        at = bisect_right(self._indices, reading)
        return self.changes[at - 1][1:] if at else self._before

    def forget_before(self, reading: int) -> None:
        """Drop the estimates no reading from ``reading`` on will ask for."""
        drop = max(0, bisect_right(self._indices, reading) - 1)
        if drop:
            self._before = self.changes[drop - 1][1:]
            del self.changes[:drop], self._indices[:drop]

    def _close(self, i: int, reading: int) -> None:
        """Close a full block of sensor ``i``: its estimates, and the thresholds that follow."""
        block = self._block[i]
        self._estimates[i].append(block_noise(block))
        self.noise[i] = np.median(np.stack(self._estimates[i]), axis=0)
        self.estimates += 1
        step = np.where(block != 0, np.abs(block), np.inf).min(axis=0)
        self.resolution[i] = np.minimum(self.resolution[i], step)
        self._filled[i] = 0
        self.blocks[i] += 1
        floor = np.where(np.isfinite(self.resolution[i]), self.resolution[i], 0.0)
        scale = np.maximum(np.sqrt(1.5) * self.noise[i], floor)
        self._scale[i] = np.where(scale > 0, scale, np.inf)  # an axis that never moved tells nothing
        # a spike's first reading jumps by more than 3/4 of the threshold (it returns within
        # half its height): readings that jump less need no closer look
        self.jump[6 * i:6 * i + 6] = (0.75 * SPIKE_Z * self._scale[i]).tolist()
        change = (reading, self.noise.copy(), self._scale.copy())
        if self.changes and self._indices[-1] == reading:
            self.changes[-1] = change
        else:
            self.changes.append(change)
            self._indices.append(reading)
