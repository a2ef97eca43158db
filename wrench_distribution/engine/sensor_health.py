"""Per-sensor health: frozen, out of range (or clipped), spikes (no ROS).

The checks (thresholds derived in :mod:`wrench_distribution.core.health`, docs/theory.md
section 15):

* **frozen**: :data:`~.FROZEN_REPEATS` readings in a row that repeat the previous one bit
  for bit on all six axes; onset: the first repeat.
* **out of range**: an axis at or beyond its rating (``sensor_ranges``); where the rating is
  unknown, an axis that holds its largest magnitude so far for :data:`~.CLIPPED_REPEATS`
  readings while another axis of the sensor moves (a clip); onset: the first such reading.
* **spike**: an excursion of at most :data:`~.SPIKE_WIDTH` readings beyond :data:`~.SPIKE_Z`
  noise scales from the mean of the readings around it, which returns (the readings around it
  agree) and which no other sensor shares (a knock on the object moves every sensor);
  onset: its first reading, found :data:`~.SPIKE_WIDTH` readings later. Looked for once the
  sensor's noise is learned (:mod:`.noise`).

Readings come k at a time: one live (a pure-Python path over the 6 n values: a few
microseconds), a chunk offline (numpy). Both apply the same rules in the same order and give
the same episodes, doubts and noise whatever the cut; the state between calls is plain lists.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import eq, gt, sub
from typing import Optional

import numpy as np

from wrench_distribution.core.health import (CLIPPED_REPEATS, CORROBORATION_Z, FROZEN_REPEATS,
                                             SPIKE_WIDTH, SPIKE_Z)
from .episodes import Episodes, NEVER
from .noise import NoiseLearner

#: the per-sensor checks, in report order
CHECKS = ('frozen', 'out_of_range', 'spike')
_LATEST = np.iinfo(np.int64).max


@dataclass
class SensorStep:
    """What the checks found in k readings.

    :param by_check: (k, n, checks) the sensor is in doubt at that reading, per check
        (:data:`CHECKS` order).
    :param events: ``(check, Episode)`` of each episode that began.
    """

    by_check: np.ndarray
    events: list

    def __post_init__(self) -> None:
        #: (k, n) the sensor is in doubt at that reading (any check)
        self.doubt = self.by_check.any(axis=-1)
        #: whether any sensor is in doubt at any of the readings
        self.any_doubt = bool(self.doubt.any())


def run_lengths(same: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Length of the run of True ending at each row, continuing ``seed`` runs (rows, ...)."""
    rows = np.arange(1, len(same) + 1).reshape((-1,) + (1,) * (same.ndim - 1))
    breaks = np.maximum.accumulate(np.where(same, 0, rows), axis=0)
    return np.where(breaks == 0, seed + rows, rows - breaks)


def excursions(rows: np.ndarray, start: int, scale: np.ndarray) -> np.ndarray:
    """(n,) sensors whose readings from ``rows[start]`` make a spike no other sensor shares.

    :param rows: (r, n, 6) readings, ``rows[start - 1]`` to ``rows[start + SPIKE_WIDTH]`` at least.
    :param start: the excursion's first row.
    :param scale: (n, 6) noise scales.
    :return: the sensors.
    """
    found = np.zeros(rows.shape[1], bool)
    for width in range(1, SPIKE_WIDTH + 1):
        before, after = rows[start - 1], rows[start + width]
        deviation = rows[start:start + width] - 0.5 * (before + after)
        size = np.abs(deviation).min(axis=0)
        same_sign = (deviation > 0).all(axis=0) | (deviation < 0).all(axis=0)
        back = np.abs(after - before) < 0.5 * size
        hit = (same_sign & back & (size > SPIKE_Z * scale)).any(axis=-1)
        loud = (np.abs(deviation) > CORROBORATION_Z * scale).any(axis=(0, 2))
        found |= hit & (loud.sum() - loud == 0)
    return found


class SensorChecks:
    """The per-sensor checks of n sensors (module docstring).

    :param n: number of sensors.
    :param ratings: (n, 6) rated range per axis (N, N m); 0 where unknown.
    """

    def __init__(self, n: int, ratings=None) -> None:
        self.n = n
        ratings = np.zeros((n, 6)) if ratings is None else np.asarray(ratings, float)
        self._ratings = ratings.ravel().tolist()
        self._rated = bool((ratings > 0).any())
        self._rating_or_inf = np.where(ratings > 0, ratings, np.inf).ravel()
        self.episodes = {check: Episodes(n) for check in CHECKS}
        self.learner = NoiseLearner(n)
        self.count = 0  # readings taken
        self._rows: list = []  # the last SPIKE_WIDTH + 1 readings, flat lists of 6 n values
        self._rows_ns: list = []
        self._run = [0] * n  # whole-reading repeats in a row, and the first repeat's stamp
        self._run_ns = [0] * n
        self._axis_run = [0] * (6 * n)  # per axis: repeats in a row, first repeat's index and stamp
        self._axis_start = [0] * (6 * n)
        self._axis_ns = [0] * (6 * n)
        self._peak = [0.0] * (6 * n)  # largest magnitude read per axis
        self._repeating = False  # whether an axis repeats its last reading (its run counts)
        self._until = [[NEVER] * n for _ in CHECKS]  # last reading index in doubt, per check
        self._until_any = NEVER  # ... of any check and sensor
        self._clear = SensorStep(np.zeros((1, n, len(CHECKS)), bool), [])  # nothing in doubt

    def update(self, stamps_ns: np.ndarray, readings: np.ndarray,
               keep: Optional[int] = None) -> SensorStep:
        """Take k synchronised readings.

        :param stamps_ns: (k,) sample stamps.
        :param readings: (k, n, 6) raw readings, sensor frames.
        :param keep: the earliest reading whose noise may still be asked for (None: the latest).
        :return: the doubt per reading and the episodes that began.
        """
        k = len(stamps_ns)
        if len(self.learner.changes) > 1:
            self.learner.forget_before(self.count - 1 if keep is None else min(keep, self.count - 1))
        if k == 1 and len(self._rows) == SPIKE_WIDTH + 1:
            return self._live(int(stamps_ns[0]), readings[0])
        return self._chunk(np.asarray(stamps_ns, np.int64), np.asarray(readings, float))

    # -- offline: a chunk, vectorised ---------------------------------------------------------
    def _chunk(self, stamps_ns: np.ndarray, readings: np.ndarray) -> SensorStep:
        """:meth:`update` on k readings with numpy.

        In the order of the live path: the frozen and out-of-range checks; the noise learned
        from the readings neither flags; the spikes, each judged with the noise of its time.
        """
        n = self.n
        tail = np.asarray(self._rows, float).reshape(-1, n, 6)
        rows = np.concatenate([tail, readings])
        rows_ns = np.concatenate([np.asarray(self._rows_ns, np.int64), stamps_ns])
        first = len(tail)
        new = rows[first:]
        previous = rows[first - 1:-1] if first else np.concatenate([new[:1] + np.nan, new[:-1]])
        repeats = new == previous
        run = run_lengths(repeats.all(axis=-1), np.asarray(self._run))
        frozen_onset = self._run_onsets(run, stamps_ns)
        previous_ns = rows_ns[first - 1:-1] if first else np.concatenate([[-1], stamps_ns[:-1]])
        range_raw, range_onset = self._range(stamps_ns, previous_ns, np.abs(new), repeats, run)
        doubts, events = [], []
        for check, raw, onset in (('frozen', run >= FROZEN_REPEATS, frozen_onset),
                                  ('out_of_range', range_raw, range_onset)):
            doubts.append(self._flag(check, raw, onset, stamps_ns, events))
        centres = np.arange(max(1, first - 1), len(rows) - 1)  # once each, with the reading after
        if len(centres):
            second = rows[centres - 1] - 2.0 * rows[centres] + rows[centres + 1]
            healthy = ~(doubts[0] | doubts[1])[centres + 1 - first]
            self.learner.add(second, healthy, self.count - first + centres + 1)
        doubts.append(self._flag('spike', *self._spikes(rows, rows_ns, first), stamps_ns, events))
        keep = min(len(rows), SPIKE_WIDTH + 1)
        self._rows = rows[-keep:].reshape(keep, -1).tolist()
        self._rows_ns = rows_ns[-keep:].tolist()
        self.count += len(new)
        return SensorStep(np.stack(doubts, axis=-1), events)

    def _run_onsets(self, run: np.ndarray, stamps_ns: np.ndarray) -> np.ndarray:
        """Stamp of each run's first repeat (k, n); keeps the runs for the next call."""
        start = np.arange(len(run))[:, None] - run + 1  # row of the first repeat
        onset = np.where(start >= 0, stamps_ns[np.clip(start, 0, len(run) - 1)],
                         np.asarray(self._run_ns))
        self._run, self._run_ns = run[-1].tolist(), onset[-1].tolist()
        return onset

    def _range(self, stamps: np.ndarray, previous_ns: np.ndarray, new: np.ndarray,
               repeats: np.ndarray, run: np.ndarray) -> tuple:
        """Out-of-range flags and onsets (k, n): at the rating, or clipped where it is unknown.

        A clip's onset is its plateau's first reading (the one before the first repeat).

        :param stamps: (k,) the readings' stamps.
        :param previous_ns: (k,) the stamps of the readings before them.
        :param new: (k, n, 6) their magnitudes.
        :param repeats: (k, n, 6) whether each axis repeats its previous reading.
        :param run: (k, n) the sensors' runs of whole repeats.
        """
        shape = (self.n, 6)
        ratings = np.reshape(self._ratings, shape)
        axis_run = run_lengths(repeats, np.reshape(self._axis_run, shape))
        index = self.count + np.arange(len(new))[:, None, None]
        local = index - axis_run + 1 - self.count  # row of the axis run's first repeat
        inside = local >= 0
        start = np.where(inside, local + self.count, np.reshape(self._axis_start, shape))
        start_ns = np.where(inside, previous_ns[np.clip(local, 0, len(new) - 1)],
                            np.reshape(self._axis_ns, shape))
        peak = np.maximum.accumulate(np.concatenate([np.reshape(self._peak, (1,) + shape), new]),
                                     axis=0)[1:]
        # clipped: at the axis's largest magnitude, changed before the run, while another axis
        # moved during it (the sensor's run of whole repeats is shorter)
        clipped = ((ratings <= 0) & (axis_run >= CLIPPED_REPEATS) & (new >= peak) & (start >= 2)
                   & (run[..., None] < axis_run))
        at_rating = ((ratings > 0) & (new >= ratings)).any(axis=-1)
        onset = np.where(at_rating, stamps[:, None],
                         np.where(clipped, start_ns, _LATEST).min(axis=-1))
        self._axis_run, self._axis_start = axis_run[-1].ravel().tolist(), start[-1].ravel().tolist()
        self._repeating = any(self._axis_run)
        self._axis_ns, self._peak = start_ns[-1].ravel().tolist(), peak[-1].ravel().tolist()
        return at_rating | clipped.any(axis=-1), onset

    def _spikes(self, rows: np.ndarray, rows_ns: np.ndarray, first: int) -> tuple:
        """Spike flags and onsets (k, n), raised :data:`SPIKE_WIDTH` readings after the onset.

        The excursion starting at a row is looked at once, with the reading SPIKE_WIDTH after
        it, and judged with the noise learned up to the reading before that one (as live).
        """
        k = len(rows) - first
        raw = np.zeros((k, self.n), bool)
        onset = np.zeros((k, self.n), np.int64)
        starts = np.arange(max(1, first - SPIKE_WIDTH), len(rows) - SPIKE_WIDTH)
        if not len(starts):
            return raw, onset
        # a spike's first reading jumps by more than 3/4 of its threshold: the smallest
        # threshold of the chunk picks the starts to look at closely
        scales = [self.learner.scale_at(self.count - 1)] + [c[2] for c in self.learner.changes]
        threshold = 0.75 * SPIKE_Z * np.min(scales, axis=0)
        jumps = (np.abs(rows[starts] - rows[starts - 1]) > threshold).any(axis=(1, 2))
        for start in starts[jumps]:
            row = start + SPIKE_WIDTH - first  # the new reading that completes it
            found = excursions(rows, int(start), self.learner.scale_at(self.count + row - 1))
            raw[row] |= found
            onset[row][found] = rows_ns[start]
        return raw, onset

    def _flag(self, check: str, raw: np.ndarray, onset: np.ndarray, stamps_ns: np.ndarray,
              events: list) -> np.ndarray:
        """Feed one check's flags (k, n) to its episodes; return its doubt (k, n)."""
        doubt, found = self.episodes[check].update(self.count, raw, onset, stamps_ns)
        events += [(check, episode) for episode in found]
        until = self.episodes[check].doubt_until().tolist()
        self._until[CHECKS.index(check)] = until
        self._until_any = max(max(u) for u in self._until)
        return doubt

    # -- live: one reading, pure Python --------------------------------------------------------
    def _live(self, stamp: int, reading: np.ndarray) -> SensorStep:
        """:meth:`update` on one reading, the tail full."""
        values = reading.ravel().tolist()
        rows, n, index = self._rows, self.n, self.count
        previous = rows[-1]
        # no axis repeats and no run counts: nothing is frozen or clipped (the common case)
        repeats = self._repeating or any(map(eq, values, previous))
        frozen = self._live_frozen(values, previous, stamp) if repeats else None
        out_of_range, jumped = self._live_axes(values, previous, stamp, index, repeats)
        spike = None
        if jumped:
            spike = excursions(np.reshape(rows + [values], (-1, n, 6)), 1, self.learner.scale)
        if (frozen is not None and any(frozen)) or out_of_range or (spike is not None and spike.any()):
            events = []
            stamps = np.array([stamp], np.int64)
            self._flag('frozen', np.array([frozen or [False] * n]), np.array([self._run_ns]),
                       stamps, events)
            self._flag('out_of_range', np.array([[i in out_of_range for i in range(n)]]),
                       np.array([[out_of_range.get(i, stamp) for i in range(n)]]), stamps, events)
            self._flag('spike', np.zeros((1, n), bool) if spike is None else spike[None],
                       np.full((1, n), self._rows_ns[1], np.int64), stamps, events)
        elif index > self._until_any:  # the common case: no sensor in doubt
            self.learner.add_row(rows[-2], previous, values, index)
            self._advance(values, stamp)
            return self._clear
        else:
            events = []
        doubt = [[index <= until for until in check] for check in self._until]
        healthy = [not (frozen_doubt or range_doubt) for frozen_doubt, range_doubt in
                   zip(doubt[0], doubt[1])]
        if all(healthy):
            self.learner.add_row(rows[-2], previous, values, index)
        else:
            second = [a - 2.0 * b + c for a, b, c in zip(rows[-2], previous, values)]
            self.learner.add(np.reshape(second, (1, n, 6)), np.array([healthy], bool), [index])
        self._advance(values, stamp)
        return SensorStep(np.array(doubt).T[None], events)

    def _live_frozen(self, values: list, previous: list, stamp: int) -> list:
        """Whole-reading runs of one reading: whether each sensor is frozen (n,)."""
        frozen = [False] * self.n
        run, run_ns = self._run, self._run_ns
        for i in range(self.n):
            if values[6 * i:6 * i + 6] == previous[6 * i:6 * i + 6]:
                run[i] += 1
                if run[i] == 1:
                    run_ns[i] = stamp
                frozen[i] = run[i] >= FROZEN_REPEATS
            else:
                run[i] = 0
        return frozen

    def _advance(self, values: list, stamp: int) -> None:
        """Keep the reading in the tail and count it."""
        rows = self._rows
        rows.append(values)
        del rows[0]
        self._rows_ns.append(stamp)
        del self._rows_ns[0]
        self.count += 1

    def _live_axes(self, values: list, previous: list, stamp: int, index: int,
                   repeats: bool) -> tuple:
        """Per axis, one reading: :meth:`_range`'s rules and the spike pre-check.

        :param repeats: whether an axis repeats its previous reading or its run still counts.
        :return: ``(sensors out of range -> onset, whether a reading SPIKE_WIDTH back jumped
            enough to start a spike)``.
        """
        rows = self._rows
        jumped = any(map(gt, map(abs, map(sub, rows[1], rows[0])), self.learner.jump))
        magnitudes = list(map(abs, values))
        if any(map(gt, magnitudes, self._peak)):  # else the peaks stay
            self._peak = list(map(max, self._peak, magnitudes))
        found: dict = {}
        if repeats:
            self._live_repeats(values, previous, magnitudes, index, found)
        if self._rated:
            for j in np.flatnonzero(np.asarray(magnitudes) >= self._rating_or_inf):
                found[int(j) // 6] = stamp
        return found, jumped

    def _live_repeats(self, values: list, previous: list, magnitudes: list, index: int,
                      found: dict) -> None:
        """Axis runs and clips of one reading (:meth:`_range`'s rules); clips into ``found``."""
        peak, axis_run, ratings = self._peak, self._axis_run, self._ratings
        for j, (value, before) in enumerate(zip(values, previous)):
            if value != before:
                axis_run[j] = 0
                continue
            axis_run[j] += 1
            if axis_run[j] == 1:
                self._axis_start[j], self._axis_ns[j] = index, self._rows_ns[-1]
            elif (axis_run[j] >= CLIPPED_REPEATS and ratings[j] <= 0 and magnitudes[j] >= peak[j]
                  and self._axis_start[j] >= 2 and self._run[j // 6] < axis_run[j]):
                found[j // 6] = min(found.get(j // 6, _LATEST), self._axis_ns[j])
        self._repeating = any(axis_run)

    @property
    def any_in_doubt(self) -> bool:
        """Tell whether any sensor is in doubt after the latest reading (fast)."""
        return self.count - 1 <= self._until_any

    def in_doubt(self) -> np.ndarray:
        """(n,) whether each sensor is in doubt after the latest reading."""
        return (self.count - 1 <= np.asarray(self._until)).any(axis=0)
