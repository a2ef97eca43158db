"""Synchronisation of the n F/T streams into samples, by header stamp.

One rule, applied message by message in arrival order, live (:meth:`StampSynchronizer.offer`)
and offline (:meth:`StampSynchronizer.push`, which matches runs of complete rounds with numpy
and gives exactly what the message-by-message rule gives):

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
from math import isfinite
from typing import List, Optional, Tuple

import numpy as np


@dataclass
class SyncCounters:
    """What the synchroniser could not use, per effector."""

    unsynchronised: np.ndarray
    stale: np.ndarray
    rejected_nan: np.ndarray
    received: np.ndarray


#: What a dropped reading or sample was, for a live node's diagnostics: ``(effector index,
#: cause, detail)``; the index is -1 for a whole sample; the detail is the skew or the age in ns.
SyncEvent = Tuple[int, str, int]


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
        self._count = 0
        self._stamp = [0] * self.n
        self._wrench = np.zeros((self.n, 6))
        #: events of the last :meth:`offer` (None while :meth:`push` runs: counters only)
        self.events: Optional[List[SyncEvent]] = None

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
        self.events = None
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
        out_stamp: list[int] = []
        out_meas: list[np.ndarray] = []
        r = start
        while r < stop:
            hi = self._accept(int(stream[r]), int(stamp_ns[r]), wrench[r], bool(finite[r]),
                              int(recv_ns[r]))
            r += 1
            if hi is not None:
                if hi >= 0:
                    out_stamp.append(hi)
                    out_meas.append(self._wrench.copy())
                break  # slots empty: let the caller try the vectorised path again
        meas = np.array(out_meas) if out_meas else np.empty((0, self.n, 6))
        return np.asarray(out_stamp, np.int64), meas, r - start

    def offer(self, i: int, stamp_ns: int, wrench, recv_ns: int
              ) -> tuple[Optional[int], Optional[np.ndarray]]:
        """Synchronise one message (the live path); :attr:`events` tells what was dropped.

        :param i: effector index.
        :param stamp_ns: header stamp.
        :param wrench: the reading (6 floats, any sequence), sensor frame.
        :param recv_ns: receive time (node clock), for ``max_age``.
        :return: ``(sample stamp, readings (n, 6))`` when a sample completes, else
            ``(None, None)``.
        """
        self.events = []
        self.counters.received[i] += 1
        hi = self._accept(i, int(stamp_ns), wrench, all(map(isfinite, wrench)), recv_ns)
        if hi is None or hi < 0:
            return None, None
        return hi, self._wrench.copy()

    def _drop(self, cause: str, i: int, detail: int = 0) -> None:
        getattr(self.counters, cause)[i] += 1
        if self.events is not None:
            self.events.append((i, cause, detail))

    def _accept(self, i: int, stamp: int, wrench: np.ndarray, finite: bool, recv: int
                ) -> Optional[int]:
        """Apply the rule to one message.

        :return: None while the slots are filling; else the slots were emptied: the sample
            stamp (the readings are in ``self._wrench``), or -1 when the sample was stale.
        """
        fresh = self._fresh
        if not finite:
            self._drop('rejected_nan', i)
            if fresh[i]:
                fresh[i] = False
                self._count -= 1
            return None
        if fresh[i]:
            self._drop('unsynchronised', i)
        else:
            fresh[i] = True
            self._count += 1
        self._stamp[i] = stamp
        self._wrench[i] = wrench
        if self._count < self.n:
            return None
        lo = min(self._stamp)
        hi = max(self._stamp)
        if hi - lo > self.tolerance_ns:
            k = self._stamp.index(lo)
            fresh[k] = False
            self._count -= 1
            self._drop('unsynchronised', k, hi - lo)
            return None
        self._fresh[:] = [False] * self.n
        self._count = 0
        if self.max_age_ns and recv - lo > self.max_age_ns:
            self.counters.stale += 1
            if self.events is not None:
                self.events.append((-1, 'stale', recv - lo))
            return -1
        return hi

    def finish(self) -> None:
        """Count the readings left waiting at the end as unsynchronised."""
        for j in range(self.n):
            if self._fresh[j]:
                self.counters.unsynchronised[j] += 1
                self._fresh[j] = False
        self._count = 0
