"""Vectorised analysis of synchronised samples with the core's ``analyze_batch``.

Like the live analyzer, one :class:`LoadDistributor` is built per contact
configuration and reused while the contacts stay within ``contact_pose_tolerance``
of the poses it was built for (see :func:`wrench_distribution.core.spatial.same_poses`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wrench_distribution.core import spatial as Q
from .columns import empty_shape, QUANTITIES
from .errors import BagError


@dataclass
class ChunkResult:
    """Analysis of k samples.

    The stamps and one array per :data:`.columns.QUANTITIES` entry (leading sample axis), also
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


@dataclass
class ChunkAnalyzer:
    """Turns synchronised sensor readings into the analyzer's outputs.

    :param config: ``AnalyzerConfig`` from :func:`wrench_distribution.params.load_analyzer_config`.
    """

    config: Any
    distributors_built: int = 0
    regimes: dict = field(default_factory=dict)
    basis_names: list = field(default_factory=list)
    basis_units: list = field(default_factory=list)

    def __post_init__(self) -> None:
        cfg = self.config
        self.names = list(cfg.effectors)
        self.types = list(cfg.contact_types)
        self.gravity = np.asarray(cfg.gravity, float)
        self.tolerance = float(cfg.contact_pose_tolerance)
        self.frame = cfg.output_frame
        self._pose: np.ndarray | None = None
        self._dist = None

    def _build(self, pose: np.ndarray):
        from wrench_distribution.core import Contact, LoadDistributor, WrenchDistributionError
        contacts = [Contact(name=nm, type=tp, position=tuple(p[:3]), orientation=tuple(p[3:]))
                    for nm, tp, p in zip(self.names, self.types, pose)]
        try:
            dist = LoadDistributor(contacts, self.config.object_model, self.config.options)
        except WrenchDistributionError as err:
            raise BagError(f'the contact configuration cannot be analysed: {err}') from None
        names = list(dist.basis_names)
        if self.basis_names and names != self.basis_names:
            raise BagError('the internal-load basis changed during the bag '
                           f'({self.basis_names} -> {names}); analyse the parts separately')
        self.basis_names = names
        self.basis_units = list(getattr(dist, 'basis_units', []))
        self.regimes[dist.regime.message] = dist.regime.name
        self.distributors_built += 1
        self._pose = np.array(pose, float)
        self._dist = dist
        return dist

    def _runs(self, poses: np.ndarray) -> list[tuple[int, int, Any, np.ndarray]]:
        """Split samples into runs sharing one distributor, building them as needed.

        :returns: ``(first, stop, distributor, pose it was built for)`` per run.
        """
        k = len(poses)
        runs: list[tuple[int, int, Any, np.ndarray]] = []
        change = np.flatnonzero(np.any(poses[1:] != poses[:-1], axis=(1, 2))) + 1
        bounds = [0] + change.tolist() + [k]
        for a, b in zip(bounds[:-1], bounds[1:]):
            pose = poses[a]
            if self._dist is None:
                self._build(pose)
            elif not Q.same_poses(pose[:, :3], pose[:, 3:], self._pose[:, :3], self._pose[:, 3:],
                                  self.tolerance):
                self._build(pose)
            if runs and runs[-1][2] is self._dist:
                runs[-1] = (runs[-1][0], b, self._dist, self._pose)
            else:
                runs.append((a, b, self._dist, self._pose))
        return runs

    def analyze(self, stamp_ns: np.ndarray, measured: np.ndarray,
                poses: np.ndarray) -> ChunkResult:
        """Analyse k samples.

        :param stamp_ns: sample stamps (k,).
        :param measured: raw sensor readings (k, n, 6), sensor frame about the sensor origin.
        :param poses: contact poses (k, n, 7) in the object frame.
        """
        k, n = measured.shape[:2]
        outs: dict[str, list] = {q.name: [] for q in QUANTITIES}
        sources = {q.name: q.source.format(frame=self.frame) for q in QUANTITIES}
        for a, b, dist, pose in (self._runs(poses) if k else []):
            contact = np.empty((b - a, n, 6))
            for i, sensor in enumerate(self.config.sensors):
                g_contact = Q.rotate_inverse(pose[i, 3:], self.gravity)
                contact[:, i] = sensor.to_contact(measured[a:b, i], g_contact)
            batch = dist.analyze_batch(contact)
            for name, source in sources.items():
                outs[name].append(getattr(batch, source))
        m = len(self.basis_names)
        values = {q.name: _join(outs[q.name], empty_shape(q, n, m)) for q in QUANTITIES}
        return ChunkResult(stamp_ns=np.asarray(stamp_ns, np.int64), values=values)


def _join(parts: list, empty: tuple) -> np.ndarray:
    """Concatenate along the sample axis (without a copy for a single part)."""
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(empty)
