"""Consistency of the set of sensors against the object's wrench, block by block (no ROS).

Where the object's wrench is known (:mod:`wrench_distribution.core.object_motion`), the
parity residual of the corrected readings (:mod:`wrench_distribution.core.consistency`) is
averaged over blocks of :data:`~.CONSISTENCY_BLOCK` samples; a block is **inconsistent** when
a group (the resultant's force or torque, a point contact's torque) lies beyond its tolerance
(``consistency_tolerance``: the model's errors) plus :data:`~.SET_Z` standard deviations of
the block's noise. Where the wrench is only known to be constant (at rest, mass unknown), the
residual is taken from its own baseline (the mean of the first :data:`~.BASELINE_BLOCKS`
consistent blocks).

An inconsistent block is explained when it can be (docs/theory.md, section 15.4): by the one
sensor in doubt from its own checks, if its faults can produce the residual; else by the one
sensor whose single-axis (or, where its faults do not reach every direction, whole) fault
fits: a **drift** of that sensor. Otherwise the set is inconsistent and the sensors that
could explain it are listed. The onset is the end of the last **quiet** block (its departure
from the baseline within noise) before it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List, Optional, Sequence

import numpy as np

from wrench_distribution.core import consistency as C
from wrench_distribution.core.health import (BASELINE_BLOCKS, CONSISTENCY_BLOCK, QUIET_FLOOR,
                                             quiet_limit, QUIET_PROBABILITY, RECOVERY_BLOCKS,
                                             SET_Z)
from .episodes import Episodes

AXES = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


@dataclass
class Finding:
    """What one inconsistent block says.

    :param stamp_ns: stamp of the block's last sample.
    :param onset_ns: end of the last quiet block before it (its first sample's stamp when none).
    :param excess: (groups,) how far each group lies beyond tolerance and noise (N, N m).
    :param named: the sensor that explains it, or None.
    :param cause: why that sensor: its own checks in doubt during the block (``frozen``,
        ``out_of_range``, ``spike``, joined by ``+``) or ``drift``; empty when none is named.
    :param axes: the named sensor's axes that fit (``fz``, ...).
    :param candidates: the sensors that could explain it (indices).
    """

    stamp_ns: int
    onset_ns: int
    excess: np.ndarray
    named: Optional[int] = None
    cause: str = ''
    axes: tuple = ()
    candidates: List[int] = field(default_factory=list)


class SetConsistency:
    """The set check of n sensors (module docstring).

    :param n: number of sensors.
    :param tolerance: ``(force N, torque N m)`` the model's errors may account for.
    :param checks: the names of the per-sensor checks whose doubts :meth:`update` is given.
    """

    def __init__(self, n: int, tolerance: Sequence[float] = (1.0, 0.2),
                 checks: Sequence[str] = ()) -> None:
        self.n = n
        self.checks = tuple(checks)
        self.tolerance = tuple(float(t) for t in tolerance)
        self.model: Optional[C.ParityModel] = None
        self._key: Optional[bytes] = None
        #: the set's state: the inconsistent episodes (one "sensor"), and the drift per sensor
        self.inconsistent = Episodes(1, RECOVERY_BLOCKS)
        self.drift = Episodes(n, RECOVERY_BLOCKS)
        self.blocks = 0  # blocks evaluated
        self.latest: Optional[Finding] = None
        self.baseline: Optional[np.ndarray] = None
        self._reset()

    def _reset(self) -> None:
        rows = 0 if self.model is None else self.model.rows
        self._contact_sum, self._expected_sum, self._count = np.zeros((self.n, 6)), np.zeros(6), 0
        self._consistent_row = np.ones(1, bool)  # the state now: consistent, suspects (1, n)
        self._suspects_row = np.zeros((1, self.n), bool)
        #: whether the set names a sensor now
        self.any_suspect = False
        self._doubt = np.zeros((self.n, len(self.checks)), bool)
        self._first_ns = 0
        self._quiet_ns: Optional[int] = None
        self._baseline_sum, self._baseline_blocks = np.zeros(rows), 0
        self.baseline = None
        self._noise_key: Optional[bytes] = None
        self._baseline_mode = False

    def set_geometry(self, positions: np.ndarray, quaternions: np.ndarray, com: Sequence[float],
                     rigid: Sequence[bool], gains: np.ndarray, resultant: bool = True,
                     point_torques: bool = False) -> None:
        """Use a contact configuration (:func:`~.core.consistency.parity_model`); a new one restarts."""
        parts = (positions, quaternions, com, rigid, gains, [resultant, point_torques])
        key = b''.join(np.asarray(a, float).tobytes() for a in parts)
        if key == self._key:
            return
        self._key = key
        self.model = C.parity_model(positions, quaternions, com, rigid, gains, resultant,
                                    point_torques)
        self._reset()

    @property
    def consistent(self) -> bool:
        """Whether the set is trusted (no inconsistent block within the recovery)."""
        return bool(self._consistent_row[0])

    def suspects(self) -> np.ndarray:
        """(n,) the sensors named by the set (a drift) and still in doubt."""
        return self._suspects_row[0]

    def update(self, stamps_ns: np.ndarray, contact: np.ndarray, expected: Optional[np.ndarray],
               noise: np.ndarray, doubt: np.ndarray) -> tuple:
        """Take k samples of one contact configuration.

        The residual is linear in the contact wrenches and the object's wrench: a block's
        mean residual is that of their sums, formed once per block.

        :param stamps_ns: (k,) sample stamps.
        :param contact: (k, n, 6) corrected contact wrenches, contact frames.
        :param expected: (k, 6) or (1, 6) the object's wrench, or None: constant, unknown (at
            rest).
        :param noise: ``row -> (n, 6)``: each sensor's noise per axis after the sample at that
            row (NaN: not learned, taken as 0).
        :param doubt: (k, n, checks) each sensor in doubt from each of its own checks, or
            None: none is.
        :return: ``(episodes begun, consistent (k,), suspects (k, n))``: each episode as
            ``(kind, Episode, Finding)`` (kind ``inconsistent``, or ``drift`` with the sensor
            in the episode), then the set's state after the last block completed at or
            before each sample (read only: the arrays may be the set's own).
        """
        self._baseline_mode = expected is None
        k = len(stamps_ns)
        if k == 1 and 0 < self._count < CONSISTENCY_BLOCK - 1:  # live, inside a block: add it up
            self._contact_sum += contact[0]
            if expected is not None:
                self._expected_sum += expected[0]
            if doubt is not None:
                self._doubt |= doubt[0]
            self._count += 1
            return [], self._consistent_row, self._suspects_row
        if expected is not None:
            expected = np.broadcast_to(expected, (k, 6))
        found, done = [], 0
        ends, states = [0], [(self._consistent_row[0], self._suspects_row[0])]
        while done < k:
            whole = (k - done) // CONSISTENCY_BLOCK
            if not self._count and self.baseline is not None and whole > 1:
                found += self._blocks(stamps_ns, contact, expected, doubt, noise, done, whole,
                                      (ends, states))
                done += whole * CONSISTENCY_BLOCK
                continue
            take = min(CONSISTENCY_BLOCK - self._count, k - done)
            self._add(stamps_ns, contact, expected, doubt, done, done + take)
            done += take
            if self._count == CONSISTENCY_BLOCK:
                found += self._evaluate(int(stamps_ns[done - 1]), noise(done - 1))
                ends.append(done - 1)
                states.append((self._consistent_row[0], self._suspects_row[0]))
        spans = np.diff(ends + [k])  # each state holds from its block's last sample on
        consistent = np.repeat([c for c, _ in states], spans)
        suspects = np.repeat(np.array([x for _, x in states]).reshape(-1, self.n), spans, axis=0)
        return found, consistent, suspects

    def _blocks(self, stamps_ns, contact, expected, doubt, noise, start: int, count: int,
                states: tuple) -> list:
        """Test ``count`` whole blocks from row ``start`` at once (the baseline formed).

        The same tests as :meth:`_test`, vectorised; only the inconsistent blocks are
        explained one by one. Appends each block's last row and state to ``states``.
        """
        n, size = self.n, CONSISTENCY_BLOCK
        stop = start + count * size
        ends = start + size * np.arange(1, count + 1) - 1
        contact_mean = contact[start:stop].reshape(count, size, n, 6).mean(axis=1)
        expected_mean = None if expected is None else expected[start:stop].reshape(
            count, size, 6).mean(axis=1)
        means = C.residuals(self.model, contact_mean, expected_mean)
        causes = (np.zeros((count, n, len(self.checks)), bool) if doubt is None else
                  doubt[start:stop].reshape(count, size, n, -1).any(axis=1))
        value = means - self.baseline if self._baseline_mode else means
        excess, quiet = np.empty((count, len(self.model.groups))), np.empty(count, bool)
        for a, b, level in _segments([noise(int(row)) for row in ends]):
            self._covariance(level)
            excess[a:b] = C.group_excess(value[a:b], self._spreads, self.model.groups,
                                         self.tolerance, SET_Z)
            departure = means[a:b] - self.baseline
            quiet[a:b] = (np.einsum('bi,ij,bj->b', departure, self._quiet_metric, departure)
                          <= quiet_limit(self.model.rows))
        stamps = np.asarray(stamps_ns)[ends]
        quiet_ns = np.maximum.accumulate(np.where(quiet, stamps, -1))
        if self._quiet_ns is not None:
            quiet_ns = np.maximum(quiet_ns, self._quiet_ns)
        onsets = np.where(quiet_ns >= 0, quiet_ns, np.asarray(stamps_ns)[ends - size + 1])
        bad = (excess > 0).any(axis=1)
        first, self.blocks = self.blocks, self.blocks + count
        self._quiet_ns = int(quiet_ns[-1]) if quiet_ns[-1] >= 0 else self._quiet_ns
        drift, findings = np.zeros((count, n), bool), {}
        for b in np.flatnonzero(bad):
            findings[b] = self._finding(int(stamps[b]), int(onsets[b]), excess[b], value[b],
                                        means[b], causes[b])
            if findings[b].cause == 'drift':
                drift[b, findings[b].named] = True
        doubt_set, begun = self.inconsistent.update(first, bad[:, None], onsets[:, None], stamps)
        doubt_drift, begun_drift = self.drift.update(first, drift, np.repeat(onsets[:, None], n, 1),
                                                     stamps)
        self._consistent_row, self._suspects_row = ~doubt_set[-1], doubt_drift[-1][None]
        self.any_suspect = bool(self._suspects_row.any())
        states[0].extend(ends.tolist())
        states[1].extend(zip(~doubt_set[:, 0], doubt_drift))
        block = {int(s): f for s, f in zip(stamps[list(findings)], findings.values())}
        return sorted([('inconsistent', e, block[e.detected_ns]) for e in begun]
                      + [('drift', e, block[e.detected_ns]) for e in begun_drift],
                      key=lambda event: event[1].detected_ns)

    def _add(self, stamps_ns, contact, expected, doubt, start: int, stop: int) -> None:
        """Add samples ``start:stop`` to the block."""
        if not self._count:
            self._first_ns = int(stamps_ns[start])
        self._contact_sum += contact[start:stop].sum(axis=0)
        if expected is not None:
            self._expected_sum += expected[start:stop].sum(axis=0)
        if doubt is not None:
            self._doubt |= doubt[start:stop].any(axis=0)
        self._count += stop - start

    def _covariance(self, noise: np.ndarray) -> np.ndarray:
        """Return the noise covariance of a block mean, its spreads and quiet metric (cached)."""
        key = noise.tobytes()
        if key != self._noise_key:
            self._noise_key = key
            noise = np.nan_to_num(np.asarray(noise, float))
            self._block_covariance = C.residual_covariance(self.model, noise) / CONSISTENCY_BLOCK
            self._spreads = C.group_spreads(self._block_covariance, self.model.groups)
            floor = QUIET_FLOOR * C.tolerance_rows(self.model, self.tolerance)
            self._quiet_metric = np.linalg.inv(self._block_covariance + np.diag(floor ** 2))
        return self._block_covariance

    def _evaluate(self, stamp_ns: int, noise: np.ndarray) -> list:
        """Test one block; return the episodes it begins (:meth:`update`); update the state."""
        begun = self._test(stamp_ns, noise)
        latest = self.blocks - 1
        self._consistent_row = ~self.inconsistent.in_doubt(latest)
        self._suspects_row = self.drift.in_doubt(latest)[None]
        self.any_suspect = bool(self._suspects_row.any())
        return begun

    def _test(self, stamp_ns: int, noise: np.ndarray) -> list:
        """Test one block; return the episodes it begins."""
        expected = None if self._baseline_mode else self._expected_sum[None] / CONSISTENCY_BLOCK
        mean = C.residuals(self.model, self._contact_sum[None] / CONSISTENCY_BLOCK, expected)[0]
        causes = self._doubt
        doubted = np.flatnonzero(causes.any(axis=1))
        self._covariance(noise)
        first_ns = self._first_ns
        self._contact_sum, self._expected_sum, self._count = np.zeros((self.n, 6)), np.zeros(6), 0
        self._doubt = np.zeros_like(causes)
        index = self.blocks
        self.blocks += 1
        if self._baseline_mode and self.baseline is None:
            self._learn_baseline(mean, doubted)
            return []
        value = mean - self.baseline if self._baseline_mode else mean
        excess = C.group_excess(value, self._spreads, self.model.groups, self.tolerance, SET_Z)
        bad = bool((excess > 0).any())
        if not bad:
            self._learn_baseline(mean, doubted)
        if self._is_quiet(mean, bad):
            self._quiet_ns = stamp_ns
        onset = first_ns if self._quiet_ns is None else self._quiet_ns
        if not bad:
            return []
        finding = self._finding(stamp_ns, onset, excess, value, mean, causes)
        _, begun = self.inconsistent.update(index, np.ones((1, 1), bool), np.array([[onset]]),
                                            [stamp_ns])
        events = [('inconsistent', e, finding) for e in begun]
        if finding.cause == 'drift':
            drift = np.zeros((1, self.n), bool)
            drift[0, finding.named] = True
            _, begun = self.drift.update(index, drift, np.full((1, self.n), onset), [stamp_ns])
            events += [('drift', e, finding) for e in begun]
        return events

    def _finding(self, stamp_ns: int, onset: int, excess: np.ndarray, value: np.ndarray,
                 mean: np.ndarray, causes: np.ndarray) -> Finding:
        """Explain an inconsistent block (:meth:`_explain`), on the fault's signature.

        :param value: the block's residual as tested; ``mean`` its residual.
        :param causes: (n, checks) the sensors' own checks in doubt during the block.
        """
        if self.baseline is not None:  # the fault's signature: constant model errors removed
            value, metric = mean - self.baseline, self._quiet_metric
        else:
            model_error = C.tolerance_rows(self.model, self.tolerance)
            metric = np.linalg.inv(self._block_covariance + np.diag(model_error ** 2))
        finding = self._explain(Finding(stamp_ns, onset, excess), value, metric,
                                np.flatnonzero(causes.any(axis=1)))
        if finding.cause == 'doubted':
            finding.cause = '+'.join(c for c, hit in zip(self.checks, causes[finding.named]) if hit)
        self.latest = finding
        return finding

    def _learn_baseline(self, mean: np.ndarray, doubted: np.ndarray) -> None:
        """Add a consistent block with no sensor in doubt to the baseline until it is formed."""
        if self.baseline is not None or len(doubted):
            return
        self._baseline_sum += mean
        self._baseline_blocks += 1
        if self._baseline_blocks == BASELINE_BLOCKS:
            self.baseline = self._baseline_sum / BASELINE_BLOCKS

    def _is_quiet(self, mean: np.ndarray, bad: bool) -> bool:
        """Whether a block's departure from the baseline is within noise (consistent before one)."""
        if self.baseline is None:
            return not bad
        departure = mean - self.baseline
        return float(departure @ self._quiet_metric @ departure) <= quiet_limit(self.model.rows)

    def _explain(self, finding: Finding, value: np.ndarray, metric: np.ndarray,
                 doubted: np.ndarray) -> Finding:
        """Name the sensor that explains an inconsistent block, or list the candidates."""
        fits = C.explain(self.model, value, metric, QUIET_PROBABILITY)
        able = sorted({h.sensor for h in fits})
        telling = sorted({h.sensor for h in fits if h.informative})
        if len(doubted) == 1 and int(doubted[0]) in able:
            finding = replace(finding, named=int(doubted[0]), cause='doubted')
        elif not len(doubted) and len(telling) == 1:
            finding = replace(finding, named=telling[0], cause='drift', axes=tuple(sorted(
                {AXES[a] for h in fits if h.sensor == telling[0] and h.informative
                 and len(h.axes) == 1 for a in h.axes})))
        return replace(finding, candidates=telling or able)


def _segments(levels: list) -> list:
    """``(start, stop, level)`` of the runs of one noise estimate (the same array) in ``levels``."""
    out, start = [], 0
    for i in range(1, len(levels) + 1):
        if i == len(levels) or levels[i] is not levels[start]:
            out.append((start, i, levels[start]))
            start = i
    return out
