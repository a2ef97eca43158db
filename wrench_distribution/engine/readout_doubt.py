"""The doubt a live read-out carries: which of its entries the sensors in doubt reach (no ROS).

The analyzer publishes its measured internal load and its friction state with a health label
(:mod:`wrench_distribution.core.doubt`). An entry is marked when a doubted sensor reaches it:
an internal-load element ``j`` when its read-out ``lambda_j = sum_i L_ji h_i`` (docs/theory.md,
5.1) depends on that sensor's contact wrench (``L_ji != 0``, found once per solver by reading
unit wrenches back through the solver's own ``analyze_batch``); a contact's friction row when
it is that contact's. A set found inconsistent with no sensor named reaches every entry.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from wrench_distribution.core.doubt import Doubt, doubt_label, TRUSTED_LABEL

#: a read-out coefficient smaller than this times its element's largest is rounding residue
REACH_RESOLUTION = 1e-9


def reach_of(distributor) -> np.ndarray:
    """Return which internal-load elements each contact's wrench reaches, (n, m) bool.

    :param distributor: the core ``LoadDistributor``.
    :return: ``reach[i, j]``: element ``j`` of the read-out depends on contact ``i``'s wrench.
    """
    n = distributor.n
    probes = np.eye(6 * n).reshape(6 * n, n, 6)
    readout = np.abs(distributor.analyze_batch(probes).internal_load).reshape(n, 6, -1).max(axis=1)
    scale = readout.max(axis=0, initial=0.0)
    return readout > REACH_RESOLUTION * np.where(scale > 0, scale, np.inf)


class ReadoutDoubt:
    """Each live sample's health label, for the internal load and for the friction rows.

    :param names: the effectors' (sensors') names.
    """

    def __init__(self, names) -> None:
        self.names = list(names)
        self._distributor = None
        self._reach = np.zeros((len(self.names), 0), bool)
        self._key: Optional[tuple] = None
        self._parts: tuple = ((), (), ())

    def reach(self, distributor) -> np.ndarray:
        """(n, m) the elements each sensor reaches on ``distributor`` (computed once per solver)."""
        if distributor is not self._distributor:
            self._distributor = distributor
            self._reach = reach_of(distributor)
        return self._reach

    def labels(self, monitor, distributor, stamp_ns: int) -> tuple:
        """Return the health labels of one sample: ``(internal load, friction rows)``.

        :param monitor: the :class:`~.health.HealthMonitor` after the sample (None: no checks).
        :param distributor: the solver that analysed it.
        :param stamp_ns: the sample's stamp (the onset's age).
        :return: two labels (:data:`~wrench_distribution.core.doubt.TRUSTED_LABEL` when clear).
        """
        if monitor is None or monitor.clear:
            return TRUSTED_LABEL, TRUSTED_LABEL
        sensors, consistent, onset_ns = monitor.in_doubt()
        key = (sensors, consistent, distributor)
        if key != self._key:
            self._key = key
            self._parts = self._reached(sensors, distributor)
        named, elements, rows = self._parts
        age = 0.0 if onset_ns is None else max(stamp_ns - onset_ns, 0) * 1e-9
        return (doubt_label(Doubt(named, consistent, age, elements)),
                doubt_label(Doubt(named, consistent, age, rows)))

    def _reached(self, sensors, distributor) -> tuple:
        """``(named sensors, internal-load elements, friction rows)`` a doubt reaches."""
        reach = self.reach(distributor)
        doubted = [i for i, _ in sensors]
        if not doubted:  # inconsistent, no sensor named: any of them, every entry
            doubted = list(range(len(self.names)))
        elements = tuple(int(j) for j in np.flatnonzero(reach[doubted].any(axis=0)))
        return tuple((self.names[i], checks) for i, checks in sensors), elements, tuple(doubted)

    def element_names(self, distributor, basis_names) -> Optional[List[List[str]]]:
        """Per sensor, the names of the elements its doubt reaches (diagnostics); None: no solver."""
        if distributor is None:
            return None
        reach = self.reach(distributor)
        return [[basis_names[j] for j in np.flatnonzero(row)] for row in reach]
