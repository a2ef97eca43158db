"""Streaming statistics of an analysis run, ``summary.json`` and its table."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from wrench_distribution.core.codec import zero_below_resolution
from wrench_distribution.engine.health_report import health_lines
from wrench_distribution.engine.results import ChunkResult
from .ledger import drops_line

#: gaps larger than this many median sample periods are listed
GAP_FACTOR = 3.0
MAX_LISTED_GAPS = 100


class _Stats:
    """Count, mean, std, min, max, rms and max |x| per column, streamed.

    A NaN (an internal-load element not in a sample's solve) is not counted; columns may be
    added (the union of the bases grows while recorded weights are followed).
    """

    def __init__(self, m: int) -> None:
        self.count = np.zeros(m, np.int64)
        self.sum = np.zeros(m)
        self.sumsq = np.zeros(m)
        self.min = np.full(m, np.inf)
        self.max = np.full(m, -np.inf)
        self._shift = np.full(m, np.nan)  # shifted sums keep the variance accurate

    def _grow(self, m: int) -> None:
        extra = m - len(self.sum)
        if extra > 0:
            for name, fill in (('count', 0), ('sum', 0.0), ('sumsq', 0.0), ('min', np.inf),
                               ('max', -np.inf), ('_shift', np.nan)):
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.full(extra, fill, old.dtype)]))

    def add(self, x: np.ndarray) -> None:
        if not len(x):
            return
        self._grow(x.shape[1])
        here = ~np.isnan(x)
        first = np.flatnonzero(np.isnan(self._shift) & here.any(axis=0))
        if first.size:
            self._shift[first] = x[here[:, first].argmax(axis=0), first]
        d = np.where(here, x - self._shift, 0.0)
        self.count += here.sum(axis=0)
        self.sum += d.sum(axis=0)
        self.sumsq += (d * d).sum(axis=0)
        self.min = np.minimum(self.min, np.where(here, x, np.inf).min(axis=0))
        self.max = np.maximum(self.max, np.where(here, x, -np.inf).max(axis=0))

    def as_dicts(self) -> list[dict]:
        out = []
        for j in range(len(self.sum)):
            count = int(self.count[j])
            if count == 0:
                out.append({'count': 0})
                continue
            md = self.sum[j] / count
            mean = md + self._shift[j]
            var = max(self.sumsq[j] / count - md * md, 0.0)
            out.append({'count': count, 'mean': float(mean), 'std': float(math.sqrt(var)),
                        'rms': float(math.sqrt(var + mean * mean)),
                        'min': float(self.min[j]), 'max': float(self.max[j]),
                        'max_abs': float(max(abs(self.min[j]), abs(self.max[j])))})
        return out


class SummaryBuilder:
    """Accumulates what ``summary.json`` reports, chunk by chunk."""

    def __init__(self, effectors: Sequence[str]) -> None:
        self.effectors = list(effectors)
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        self.period: float | None = None
        self.gaps: list[dict] = []
        self.gap_count = 0
        self.max_residual = 0.0
        self.max_residual_stamp: float | None = None
        self._lam: _Stats | None = None
        self._norm = _Stats(1)

    def add(self, chunk: ChunkResult) -> None:
        """Account for one analysed chunk."""
        k = len(chunk)
        if not k:
            return
        st = chunk.stamp_ns
        if self._lam is None:
            self._lam = _Stats(chunk.internal_load.shape[1])
        prev = np.concatenate([[self.last], st[:-1]]) if self.last is not None else st[:-1]
        cur = st if self.last is not None else st[1:]
        dt = cur - prev
        if self.period is None and len(dt) >= 1:
            positive = dt[dt > 0]
            self.period = float(np.median(positive)) if positive.size else None
        if self.period:
            big = np.flatnonzero(dt > GAP_FACTOR * self.period)
            self.gap_count += len(big)
            for j in big[:max(0, MAX_LISTED_GAPS - len(self.gaps))]:
                self.gaps.append({'start': prev[j] * 1e-9, 'end': cur[j] * 1e-9,
                                  'duration': dt[j] * 1e-9})
        if self.first is None:
            self.first = int(st[0])
        self.last = int(st[-1])
        self.count += k
        j = int(np.argmax(chunk.residual))
        if chunk.residual[j] > self.max_residual or self.max_residual_stamp is None:
            self.max_residual = float(chunk.residual[j])
            self.max_residual_stamp = st[j] * 1e-9
        self._lam.add(chunk.internal_load)
        self._norm.add(chunk.internal_load_norm[:, None])

    def build(self, *, bag: str, storage: str, pose_source: str, counters: Any,
              basis_names: Sequence[str], basis_units: Sequence[str], regimes: dict,
              distributors_built: int, config: str, topics: Sequence[str]) -> dict:
        """Return the content of ``summary.json``."""
        lam = self._lam.as_dicts() if self._lam else [{'count': 0}] * len(basis_names)
        units = list(basis_units) + ['N'] * (len(basis_names) - len(basis_units))
        per_eff = {}
        for i, eff in enumerate(self.effectors):
            per_eff[eff] = {'topic': topics[i], 'received': int(counters.received[i]),
                            'unsynchronised': int(counters.unsynchronised[i]),
                            'stale': int(counters.stale[i]),
                            'rejected_nan': int(counters.rejected_nan[i]),
                            'future': int(counters.future[i]),
                            'wrong_frame': int(counters.frame[i])}
        span = (self.last - self.first) * 1e-9 if self.count else 0.0
        return {
            'bag': bag, 'storage': storage, 'config': config, 'contact_poses': pose_source,
            'samples': self.count,
            'time_span': {'start': self.first * 1e-9 if self.count else None,
                          'end': self.last * 1e-9 if self.count else None,
                          'duration': span},
            'sample_period': self.period * 1e-9 if self.period else None,
            'gaps': {'threshold_periods': GAP_FACTOR, 'count': self.gap_count,
                     'listed': self.gaps},
            'stamps_going_backwards': 0,  # counted on the messages (ledger.account)
            'dropped': {
                'unsynchronised_messages': int(counters.unsynchronised.sum()),
                'stale_messages': int(counters.stale.sum()),
                'rejected_nan_messages': int(counters.rejected_nan.sum()),
                'future_messages': int(counters.future.sum()),
                'wrong_frame_messages': int(counters.frame.sum()),
                'out_of_order_samples': int(counters.out_of_order),
                'samples_without_contact_pose': int(counters.no_pose),
                'samples_without_orientation': int(getattr(counters, 'no_orientation', 0)),
                'per_effector': per_eff},
            'max_resultant_residual': self.max_residual,
            'max_resultant_residual_stamp': self.max_residual_stamp,
            'internal_load': {name: dict(unit=u, **s)
                              for name, u, s in zip(basis_names, units, lam)},
            'internal_load_norm': dict(unit='N', **self._norm.as_dicts()[0]),
            'regimes': [{'name': v, 'message': k} for k, v in regimes.items()],
            'distributors_built': distributors_built,
        }


def write_json(path: Path, summary: dict) -> None:
    """Write ``summary.json`` (NaN-free, indented)."""
    Path(path).write_text(json.dumps(summary, indent=2, allow_nan=False) + '\n')


def read_json(path: Path) -> dict:
    """Read a ``summary.json``.

    :raises OSError: unreadable; :raises ValueError: not JSON.
    """
    return json.loads(Path(path).read_text(encoding='utf-8'))


def _num(x: Any) -> str:
    return '-' if x is None else f'{x:.6g}'


def _time(x: Any) -> str:
    return '-' if x is None else f'{x:.6f}'


def format_table(summary: dict) -> str:
    """Return the summary as a plain-text table."""
    ts = summary['time_span']
    d = summary['dropped']
    lines = [
        f"bag            {summary['bag']} ({summary['storage']})",
        f"contact poses  {summary['contact_poses']}",
        f"samples        {summary['samples']}",
        f"time span      {_time(ts['start'])} .. {_time(ts['end'])} s "
        f"({_num(ts['duration'])} s, period {_num(summary['sample_period'])} s)",
        f"gaps           {summary['gaps']['count']} "
        f"(> {summary['gaps']['threshold_periods']:g} periods)",
        f'dropped        {drops_line(d)}',
        f"stamps back    {summary.get('stamps_going_backwards', 0)} F/T messages stamped before "
        'the previous one of their topic',
        f"max residual   {_num(summary['max_resultant_residual'])}",
    ]
    if 'complete' in summary:
        state = 'yes' if summary['complete'] else (
            'NO: ' + '; '.join(summary['incomplete_because'][:4]))
        lines.append('complete       ' + state)
    done = summary.get('completeness')
    if done:
        lines += [f'problem        {p}' for p in done['problems'][:10]]
        lines += [f'note           {n}' for n in done['notes']]
    if 'health' in summary:
        lines += health_lines(summary['health'])
    if 'contact_weights' in summary:
        lines += weights_lines(summary['contact_weights'])
    lines.append('')
    rows = [(name, s.get('unit', ''), s) for name, s in summary['internal_load'].items()]
    rows.append(('internal_load_norm', 'N', summary['internal_load_norm']))
    width = max([len(r[0]) for r in rows] + [len('internal load')])
    head = f"{'internal load':<{width}}  unit  {'mean':>11} {'std':>11} {'min':>11} {'max':>11}"
    lines += [head, '-' * len(head)]
    # the table is one document: residue below its resolution reads 0 (core.codec's rule)
    shown = zero_below_resolution([[s.get(k) for k in ('mean', 'std', 'min', 'max')]
                                   for _, _, s in rows])
    for (name, unit, _), figures in zip(rows, shown):
        lines.append(f'{name:<{width}}  {unit:<4}  ' + ' '.join(f'{_num(x):>11}' for x in figures))
    return '\n'.join(lines)


def weights_lines(weights: dict) -> list:
    """Return the printed table's lines of the contact weights followed (``contact_weights``)."""
    if not weights.get('followed'):
        return [f"weights        not followed: {weights.get('reason', '')}"]
    lines = [f"weights        followed {weights['topic']}: {weights['changes']} changes, "
             f"{weights['refused']} messages refused"]
    for change in weights['listed_changes'][:10]:
        moved = [f'{name} released' for name in change['released']] + \
            [f'{name} back' for name in change['returned']]
        lines.append(f"weights        {change['time_s']:.6f} s: {', '.join(moved) or 'weights changed'}")
    lines += [f"refused        {r['time_s']:.6f} s: {r['reason']}" for r in weights['listed_refused'][:10]]
    states = weights.get('contact_states') or {}
    lines += [f"contact state  {f['time_s']:.6f} s: {f['contact']} {f['finding']} (commanded {f['commanded']})"
              for f in states.get('listed', [])[:10]]
    return lines
