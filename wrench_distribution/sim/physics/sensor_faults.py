"""The simulated F/T streams with their faults (``object_sim``'s ``sensor_faults``).

What each fault does: :mod:`wrench_distribution.config.sensor_faults`. The faults act on what
the sensors publish, after the healthy reading (truth, tool, bias, noise) is made.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ...config.sensor_faults import SensorFault


class FaultyStreams:
    """What the sensors publish with their faults: :meth:`apply` per published reading.

    :param faults: the faults (any number per sensor, applied in order).
    :param n: the number of sensors.
    """

    def __init__(self, faults: Sequence[SensorFault], n: int) -> None:
        self.faults = list(faults)
        self._last: Optional[np.ndarray] = None  # the readings published last, (n, 6)
        self._held = [None] * len(self.faults)   # each freeze's repeated reading

    def apply(self, t: float, readings: np.ndarray) -> np.ndarray:
        """Return the readings published at sim time ``t``.

        :param t: sim time (s).
        :param readings: (n, 6) the healthy sensors' readings.
        :return: (n, 6) with the faults written in (a new array).
        """
        out = np.array(readings, float)
        for k, fault in enumerate(self.faults):
            i, axis = fault.sensor, fault.axis
            if fault.kind == 'drift' and t >= fault.start:
                out[i, axis] += fault.size * (min(t, fault.start + fault.duration) - fault.start)
            if not fault.active(t):
                self._held[k] = None
                continue
            if fault.kind == 'freeze':
                if self._held[k] is None:
                    self._held[k] = (out[i] if self._last is None else self._last[i]).copy()
                out[i] = self._held[k]
            elif fault.kind == 'clip':
                out[i, axis] = np.clip(out[i, axis], -fault.size, fault.size)
            elif fault.kind == 'spike':
                out[i, axis] += fault.size
        self._last = out.copy()
        return out

    def onsets(self) -> list:
        """Return ``(sensor, kind, start)`` of every fault, in time order."""
        return sorted(((f.sensor, f.kind, f.start) for f in self.faults), key=lambda x: x[2])
