"""The per-sample quantities of a bag analysis: one list, read by every writer.

Each :class:`Quantity` names a result of ``LoadDistributor.analyze_batch`` and how it
becomes columns. The analysis (:mod:`.analysis`) collects exactly these quantities,
and ``samples.parquet`` / ``samples.csv`` (:mod:`.samples`) have exactly their
columns, so adding a per-sample output is one line in :data:`QUANTITIES`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
WRENCH_UNITS = ('N', 'N', 'N', 'N*m', 'N*m', 'N*m')
#: name of the stamp column (header stamp, int64 nanoseconds)
STAMP = 'stamp_ns'


@dataclass(frozen=True)
class Quantity:
    """One per-sample result and its columns.

    :param name: column prefix (and key in :class:`.analysis.ChunkResult`).
    :param shape: ``effector_wrench`` (k, n, 6): ``<effector>.<name>.<component>``;
        ``wrench`` (k, 6): ``<name>.<component>``; ``basis`` (k, m):
        ``<name>.<basis element>``; ``scalar`` (k,): ``<name>``.
    :param source: attribute of the batch result; ``{frame}`` is replaced by the
        configured ``output_frame`` (``contact`` or ``object``).
    :param unit: unit of a ``scalar`` (the others have wrench or basis units).
    """

    name: str
    shape: str
    source: str
    unit: str = ''


#: every per-sample output, in column order (after the stamp)
QUANTITIES: tuple[Quantity, ...] = (
    Quantity('manipulating', 'effector_wrench', 'manipulating_{frame}'),
    Quantity('constraint', 'effector_wrench', 'constraint_{frame}'),
    Quantity('internal', 'effector_wrench', 'internal_{frame}'),
    Quantity('invariant', 'effector_wrench', 'invariant_{frame}'),
    Quantity('resultant', 'wrench', 'resultant'),
    Quantity('internal_load', 'basis', 'internal_load'),
    Quantity('internal_load_norm', 'scalar', 'internal_load_norm', 'N'),
    Quantity('invariant_norm', 'scalar', 'invariant_norm', 'N'),
    Quantity('residual', 'scalar', 'residual', 'N, N*m'),  # max |G h_m - resultant|
)


def empty_shape(q: Quantity, n: int, m: int) -> tuple[int, ...]:
    """Shape of zero samples of ``q`` (n effectors, m basis elements)."""
    return {'effector_wrench': (0, n, 6), 'wrench': (0, 6), 'basis': (0, m),
            'scalar': (0,)}[q.shape]


def columns(effectors: Sequence[str], basis_names: Sequence[str],
            basis_units: Sequence[str]) -> list[tuple[str, str, Quantity]]:
    """``(column name, unit, quantity)`` of every value column, in file order.

    Within an ``effector_wrench`` the columns run effector by effector, then by
    component; that is also the C order of the (k, n, 6) array.
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
    return out
