"""Friction offline: what the analyzer node publishes on ``measured/friction``, per sample.

When friction is configured (``friction_coefficients``, or point contacts, which only push),
each analysed sample's applied wrenches ``h = h_m - h_c`` (eq. 80) in the contact frames go
through the core's :meth:`FrictionModel.check`, the call the node makes, and give per contact
the utilisation (-1 where undefined, as on the topic), the normal force and the status code
(index in :data:`~wrench_distribution.core.friction.STATUSES`). They are written to
``friction.parquet`` (one row per sample) and summarised per contact in ``summary.json``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy.spatial.transform import Rotation

from wrench_distribution.core.friction import FrictionModel, FrictionOptions, STATUSES
from wrench_distribution.engine.results import ChunkResult
from .samples import close_writer

FIELDS = (('utilisation', '1'), ('normal_force', 'N'), ('status', 'code'))


def friction_active(config: Any) -> bool:
    """Tell whether the configuration has a friction cone or a push-only (point) contact."""
    cones = any(x['friction'] is not None for x in config.contact_extras)
    return cones or 'point' in list(config.contact_types)


class FrictionRecorder:
    """Per-sample friction state of an analysis, ``friction.parquet`` and its summary.

    :param config: the analyzer configuration.
    :param engine: the analysis engine (its solver and contact poses).
    :param out_dir: where ``friction.parquet`` goes.
    """

    def __init__(self, config: Any, engine: Any, out_dir: Path) -> None:
        self.names = list(config.effectors)
        self.engine = engine
        self.options = FrictionOptions('check', config.settings.friction.margin)
        self.path = Path(out_dir) / 'friction.parquet'
        self._model: Optional[FrictionModel] = None
        self._for = None
        self._writer: Optional[pq.ParquetWriter] = None
        n = len(self.names)
        self.count = 0
        self.utilisation_max = np.full(n, -1.0)
        self.utilisation_sum = np.zeros(n)
        self.utilisation_count = np.zeros(n, np.int64)
        self.normal_min = np.full(n, np.inf)
        self.normal_max = np.full(n, -np.inf)
        self.status_counts = np.zeros((n, len(STATUSES)), np.int64)

    def model(self) -> FrictionModel:
        """Return the friction model of the engine's current solver (built once per solver)."""
        distributor = self.engine.cache.distributor
        if self._for is not distributor:
            self._model = FrictionModel(distributor, self.options)
            self._for = distributor
        return self._model

    def applied(self, chunk: ChunkResult) -> np.ndarray:
        """Return the applied wrenches (k, n, 6), contact frames: ``h = h_m - h_c`` (eq. 80)."""
        h = chunk.manipulating - chunk.constraint
        if self.engine.config.settings.output_frame != 'object':
            return h
        poses, _ = self.engine.poses.at(chunk.stamp_ns)  # object axes -> contact frames
        inverse = Rotation.from_quat(poses[..., 3:].reshape(-1, 4)).inv()
        k, n = h.shape[:2]
        flat = h.reshape(-1, 6)
        return np.concatenate([inverse.apply(flat[:, :3]), inverse.apply(flat[:, 3:])],
                              axis=1).reshape(k, n, 6)

    def add(self, chunk: ChunkResult) -> None:
        """Check every sample of an analysed chunk and write its rows."""
        k = len(chunk)
        if not k:
            return
        model = self.model()
        h = self.applied(chunk)
        rows = np.empty((k, len(self.names), 3))
        for j in range(k):
            check = model.check(h[j])
            rows[j, :, 0] = np.nan_to_num(check.utilisation, nan=-1.0)
            rows[j, :, 1] = check.normal_force
            rows[j, :, 2] = check.codes
        self._account(rows)
        self._write(chunk.stamp_ns, rows)

    def _account(self, rows: np.ndarray) -> None:
        util = rows[:, :, 0]
        defined = util >= 0
        self.count += len(rows)
        self.utilisation_max = np.maximum(self.utilisation_max, util.max(axis=0))
        self.utilisation_sum += np.where(defined, util, 0.0).sum(axis=0)
        self.utilisation_count += defined.sum(axis=0)
        self.normal_min = np.minimum(self.normal_min, rows[:, :, 1].min(axis=0))
        self.normal_max = np.maximum(self.normal_max, rows[:, :, 1].max(axis=0))
        for i in range(len(self.names)):
            self.status_counts[i] += np.bincount(rows[:, i, 2].astype(np.int64),
                                                 minlength=len(STATUSES))

    def _write(self, stamps: np.ndarray, rows: np.ndarray) -> None:
        arrays = [pa.array(np.asarray(stamps, np.int64))]
        fields = [pa.field('stamp_ns', pa.int64(), metadata={'unit': 'ns'})]
        for i, name in enumerate(self.names):
            for j, (field, unit) in enumerate(FIELDS):
                fields.append(pa.field(f'{name}.friction.{field}', pa.float64(),
                                       metadata={'unit': unit}))
                arrays.append(pa.array(rows[:, i, j]))
        table = pa.Table.from_arrays(arrays, schema=pa.schema(
            fields, metadata={b'statuses': ','.join(STATUSES).encode()}))
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table)

    def close(self) -> None:
        """Finish ``friction.parquet``."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            close_writer(writer)

    def summary(self) -> dict:
        """Per contact: utilisation max and mean, normal force range, samples per status."""
        out = {}
        for i, name in enumerate(self.names):
            used = int(self.utilisation_count[i])
            out[name] = {
                'utilisation_max': float(self.utilisation_max[i]) if used else None,
                'utilisation_mean': float(self.utilisation_sum[i] / used) if used else None,
                'normal_force_min': float(self.normal_min[i]) if self.count else None,
                'normal_force_max': float(self.normal_max[i]) if self.count else None,
                'status_samples': {s: int(c) for s, c in zip(STATUSES, self.status_counts[i])
                                   if c}}
        return {'samples': self.count, 'margin': self.options.margin, 'contacts': out}
