"""Synchronisation of the n F/T streams into samples, by header stamp.

The rule is the analyzer node's (``analyzer_node.AnalyzerNode._on_ft``), applied
message by message in arrival (bag) order:

* each effector has one slot holding its latest reading; a new message replaces it
  (a replaced, unused reading is counted as unsynchronised); a reading with NaN or
  Inf empties the slot;
* once every slot is full: if the header stamps span more than ``sync_tolerance``,
  the oldest reading is dropped (unsynchronised); otherwise, if ``max_age`` > 0 and
  the oldest stamp is older than ``max_age`` at the arrival time (the receive time,
  i.e. the node clock under ``use_sim_time``), the n readings are dropped as stale;
  otherwise they form one sample stamped with the newest header stamp. Either way
  the slots are emptied.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SyncCounters:
    """What the synchroniser could not use, per effector."""

    unsynchronised: np.ndarray
    stale: np.ndarray
    rejected_nan: np.ndarray
    received: np.ndarray


@dataclass
class StampSynchronizer:
    """Streaming synchroniser; feed chunks in bag order with :meth:`push`.

    :param n: number of effectors (streams).
    :param tolerance_ns: largest stamp skew inside a sample.
    :param max_age_ns: staleness limit against the receive time; 0 disables.
    """

    n: int
    tolerance_ns: int
    max_age_ns: int = 0
    counters: SyncCounters = field(init=False)

    def __post_init__(self) -> None:
        z = np.zeros(self.n, np.int64)
        self.counters = SyncCounters(z.copy(), z.copy(), z.copy(), z.copy())
        self._fresh = [False] * self.n
        self._stamp = [0] * self.n
        self._wrench = np.zeros((self.n, 6))

    #: groups examined per vectorised attempt, and slow-path messages between two
    #: attempts that found nothing (bounds the work on irregular streams)
    FAST_WINDOW = 8192
    FAST_COOLDOWN = 256

    def push(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
             wrench: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Synchronise one chunk of messages (bag order).

        Runs of complete rounds (n consecutive messages, one per effector, stamps within
        the tolerance, nothing waiting in the slots) are matched with numpy, which gives
        exactly what the message-by-message rule gives; the rest goes through the rule.

        :returns: ``(sample stamps (s,) int64 ns, measured (s, n, 6))`` of the samples
            completed in this chunk (sensor frames, as recorded).
        """
        n = self.n
        stream = np.asarray(stream, np.int64)
        recv_ns = np.asarray(recv_ns, np.int64)
        stamp_ns = np.asarray(stamp_ns, np.int64)
        self.counters.received += np.bincount(stream, minlength=n)
        finite = np.isfinite(wrench).all(axis=1)
        stamps_out: list[np.ndarray] = []
        measured_out: list[np.ndarray] = []
        pos, size, cooldown = 0, len(stream), 0
        while pos < size:
            if cooldown <= 0 and not any(self._fresh):
                g = self._complete_rounds(stream, recv_ns, stamp_ns, finite, pos)
                if g:
                    end = pos + g * n
                    block = stream[pos:end].reshape(g, n)
                    rows = np.empty((g, n), np.int64)
                    np.put_along_axis(rows, block,
                                      np.arange(pos, end).reshape(g, n), axis=1)
                    stamps_out.append(stamp_ns[pos:end].reshape(g, n).max(axis=1))
                    measured_out.append(wrench[rows])
                    pos = end
                    continue
                cooldown = self.FAST_COOLDOWN
            stop = size if cooldown <= 0 else min(size, pos + cooldown)
            st, meas, used = self._slow(stream, recv_ns, stamp_ns, wrench, finite, pos, stop)
            cooldown -= used
            pos += used
            if len(st):
                stamps_out.append(st)
                measured_out.append(meas)
        if not stamps_out:
            return np.empty(0, np.int64), np.empty((0, n, 6))
        return np.concatenate(stamps_out), np.concatenate(measured_out)

    def _complete_rounds(self, stream, recv_ns, stamp_ns, finite, pos: int) -> int:
        """How many complete, valid rounds start at ``pos`` (slots empty)."""
        n = self.n
        m = min((len(stream) - pos) // n, self.FAST_WINDOW)
        if m == 0:
            return 0
        end = pos + m * n
        block = stream[pos:end].reshape(m, n)
        st = stamp_ns[pos:end].reshape(m, n)
        lo = st.min(axis=1)
        ok = (np.left_shift(1, block).sum(axis=1) == (1 << n) - 1)
        ok &= st.max(axis=1) - lo <= self.tolerance_ns
        ok &= finite[pos:end].reshape(m, n).all(axis=1)
        if self.max_age_ns:
            ok &= recv_ns[pos:end].reshape(m, n)[:, -1] - lo <= self.max_age_ns
        return m if ok.all() else int(np.argmin(ok))

    def _slow(self, stream, recv_ns, stamp_ns, wrench, finite, start: int, stop: int
              ) -> tuple[np.ndarray, np.ndarray, int]:
        """Apply the message-by-message rule on ``[start, stop)``.

        Stop early once the slots are empty again after a sample. Return the samples and the
        messages used.
        """
        n, tol, age = self.n, self.tolerance_ns, self.max_age_ns
        fresh, slot_stamp, slot_wrench = self._fresh, self._stamp, self._wrench
        out_stamp: list[int] = []
        out_meas: list[np.ndarray] = []
        c = self.counters
        count = sum(fresh)
        r = start
        while r < stop:
            i = int(stream[r])
            if not finite[r]:
                c.rejected_nan[i] += 1
                if fresh[i]:
                    fresh[i] = False
                    count -= 1
                r += 1
                continue
            if fresh[i]:
                c.unsynchronised[i] += 1
            else:
                fresh[i] = True
                count += 1
            slot_stamp[i] = int(stamp_ns[r])
            slot_wrench[i] = wrench[r]
            r += 1
            if count < n:
                continue
            lo = min(slot_stamp)
            hi = max(slot_stamp)
            if hi - lo > tol:
                k = slot_stamp.index(lo)
                fresh[k] = False
                count -= 1
                c.unsynchronised[k] += 1
                continue
            for j in range(n):
                fresh[j] = False
            count = 0
            if age and int(recv_ns[r - 1]) - lo > age:
                c.stale += 1
            else:
                out_stamp.append(hi)
                out_meas.append(slot_wrench.copy())
            break  # slots empty: let the caller try the vectorised path again
        meas = np.array(out_meas) if out_meas else np.empty((0, n, 6))
        return np.asarray(out_stamp, np.int64), meas, r - start

    def finish(self) -> None:
        """Count the readings left waiting at the end as unsynchronised."""
        for j in range(self.n):
            if self._fresh[j]:
                self.counters.unsynchronised[j] += 1
                self._fresh[j] = False
