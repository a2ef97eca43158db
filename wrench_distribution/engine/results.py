"""The per-sample quantities of an analysis: one list, read by the nodes and every writer.

Each :class:`Quantity` names a result of ``LoadDistributor.analyze_batch``. The engine
collects exactly these quantities into a :class:`ChunkResult`; the analyzer node publishes
them and ``samples.parquet`` / ``samples.csv`` have exactly their columns, so adding a
per-sample output is one line in :data:`QUANTITIES`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterator

import numpy as np


@dataclass(frozen=True)
class Quantity:
    """One per-sample result and its columns.

    :param name: column prefix (and key in :class:`ChunkResult`).
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


@dataclass
class ChunkResult:
    """Analysis of k samples.

    The stamps and one array per :data:`QUANTITIES` entry (leading sample axis), also
    readable as attributes (``chunk.internal_load``).
    """

    stamp_ns: np.ndarray
    values: dict

    def __getattr__(self, name: str) -> np.ndarray:
        try:
            return self.__dict__['values'][name]
        except KeyError:
            raise AttributeError(name) from None

    def __len__(self) -> int:
        return len(self.stamp_ns)


class LazyValues(Mapping):
    """The quantities of one analysed batch, each read off it when first asked for.

    The live path hands these to the node, which asks only for what it publishes: the
    invariant state (an iterative solve per sample) costs nothing when nobody reads it.

    :param batch: the core ``BatchAnalysis``.
    :param frame: the configured ``output_frame``.
    """

    def __init__(self, batch, frame: str) -> None:
        self._batch = batch
        self._sources = _SOURCES[frame]
        self._values: dict = {}

    def __getitem__(self, name: str) -> np.ndarray:
        """Return one quantity (computed on first access)."""
        value = self._values.get(name)  # no exception on a first access: the per-sample path
        if value is None:
            source = self._sources[name]  # KeyError for an unknown name, as a dict
            value = self._values[name] = getattr(self._batch, source)
        return value

    def __iter__(self) -> Iterator[str]:
        """Iterate over the quantities' names, in :data:`QUANTITIES` order."""
        return iter(self._sources)

    def __len__(self) -> int:
        """Return the number of quantities."""
        return len(self._sources)


#: output frame -> quantity name -> attribute of the batch result
_SOURCES = {frame: {q.name: q.source.format(frame=frame) for q in QUANTITIES}
            for frame in ('contact', 'object')}


def join(parts: list, empty: tuple) -> np.ndarray:
    """Concatenate along the sample axis (without a copy for a single part)."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(empty)
