"""The per-sample quantities of a bag analysis: one list, read by every writer.

The quantities are the engine's (:data:`wrench_distribution.engine.results.QUANTITIES`);
this module says how each becomes columns of ``samples.parquet`` / ``samples.csv``. A bag
whose recorded contact weights are followed (:mod:`wrench_distribution.engine.weight_schedule`)
has the union of the bases it met as its ``internal_load`` columns (NaN where an element is
not in a sample's solve) and :data:`WEIGHT` last: the weight of each contact at each sample.
"""
from __future__ import annotations

from typing import Sequence

from wrench_distribution.engine.results import QUANTITIES, Quantity
from wrench_distribution.engine.weight_schedule import WEIGHT_KEY

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
WRENCH_UNITS = ('N', 'N', 'N', 'N*m', 'N*m', 'N*m')
#: name of the stamp column (header stamp, int64 nanoseconds)
STAMP = 'stamp_ns'
#: the weight each contact is read out with: ``<effector>.contact_weight`` (following weights only)
WEIGHT = Quantity(WEIGHT_KEY, 'effector_scalar', WEIGHT_KEY, '1')


def columns(effectors: Sequence[str], basis_names: Sequence[str],
            basis_units: Sequence[str], weights: bool = False) -> list[tuple[str, str, Quantity]]:
    """``(column name, unit, quantity)`` of every value column, in file order.

    Within an ``effector_wrench`` the columns run effector by effector, then by
    component; that is also the C order of the (k, n, 6) array.

    :param weights: add the followed weights (:data:`WEIGHT`) last.
    """
    units = list(basis_units) + ['N'] * (len(basis_names) - len(basis_units))
    out = []
    for q in QUANTITIES:
        if q.shape == 'effector_wrench':
            out += [(f'{e}.{q.name}.{c}', u, q) for e in effectors
                    for c, u in zip(COMPONENTS, WRENCH_UNITS)]
        elif q.shape == 'wrench':
            out += [(f'{q.name}.{c}', u, q) for c, u in zip(COMPONENTS, WRENCH_UNITS)]
        elif q.shape == 'basis':
            out += [(f'{q.name}.{b}', u, q) for b, u in zip(basis_names, units)]
        else:
            out.append((q.name, q.unit, q))
    if weights:
        out += [(f'{e}.{WEIGHT.name}', WEIGHT.unit, WEIGHT) for e in effectors]
    return out
