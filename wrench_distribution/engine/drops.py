"""The analysis engine's drop rules, one set for the live path and the bag tools (no ROS).

A reading in another frame than its ``ft_frames`` entry is dropped (``frame``); a reading
stamped more than ``max_future`` after its receive time is dropped (``future``); a sample
stamped at or before the last analysed one is dropped (``out_of_order``: outputs never go
backwards). :class:`DropRules` holds the rules, their thresholds and their counters, and
answers one reading at a time (the node) or a chunk at once (``analyze-bag``): the same rule
in both forms, side by side. Each drop the live path reports is a :class:`Drop`.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from wrench_distribution.core.codec import same_frame
from .status import ERROR, STALE, WARN

#: cause of a drop -> (diagnostic level, concern, counter it also adds to, or None)
DROP_KINDS = {
    'future': (ERROR, 'input', None), 'nan': (ERROR, 'input', 'rejected_nan'),
    'malformed': (ERROR, 'input', None),
    'frame': (ERROR, 'input', None), 'unsynchronised': (WARN, 'input', None),
    'stale': (WARN, 'input', 'stale_drops'), 'out_of_order': (WARN, 'input', None),
    'no_contacts': (ERROR, 'contacts', 'no_contacts'),
    'no_orientation': (ERROR, 'sensing', 'no_orientation'),
    'solver_nan': (ERROR, 'solver', 'rejected_nan'),
}


@dataclass
class Drop:
    """One dropped reading (``effector`` >= 0) or sample (``effector`` -1).

    :param cause: ``future``, ``nan``, ``malformed``, ``frame``, ``unsynchronised``, ``stale``,
        ``out_of_order``, ``no_contacts``, ``no_orientation``, ``solver_nan``.
    :param message: what happened, user-readable.
    :param counter: the aggregate counter it adds to (None: the cause's, :data:`DROP_KINDS`).
    """

    effector: int
    cause: str
    message: str
    counter: Optional[str] = None

    def __post_init__(self) -> None:
        level, concern, counter = DROP_KINDS[self.cause]
        self.level: int = level
        self.concern: str = concern
        if self.counter is None:
            self.counter = counter


class DropRules:
    """The frame, future-stamp and order rules, with their counters (module docstring).

    :param names: effector names.
    :param ft_frames: expected ``frame_id`` per F/T stream ('': any).
    :param future_ns: ``max_future`` (0: no check).
    """

    def __init__(self, names: Sequence[str], ft_frames: Sequence[str], future_ns: int) -> None:
        self.names = list(names)
        self.ft_frames = list(ft_frames)
        self.future_ns = int(future_ns)
        n = len(self.names)
        self.wrong_frame = np.zeros(n, np.int64)
        self.future = np.zeros(n, np.int64)
        self.out_of_order = 0
        #: header stamp of the newest reading of each stream (None: none yet)
        self.last_stamp_ns: List[Optional[int]] = [None] * n
        #: stamp of the last sample analysed (None: none yet)
        self.last_out_ns: Optional[int] = None

    def configure(self, future_ns: int) -> None:
        """Adopt a new ``max_future`` (runtime parameter).

        :param future_ns: the new limit (0: no check).
        """
        self.future_ns = int(future_ns)

    # -- one reading, one sample (live) --------------------------------------------------------
    def reading(self, i: int, stamp_ns: int, recv_ns: int, frame_id: str) -> Optional[Drop]:
        """Judge one reading: None to keep it, else its drop (counted).

        :param i: effector index.
        :param stamp_ns: its header stamp.
        :param recv_ns: receive time (node clock; 0 when the clock has not started: no check).
        :param frame_id: its header frame id.
        :return: None, or the drop.
        """
        self.last_stamp_ns[i] = stamp_ns
        want = self.ft_frames[i]
        if want and not same_frame(frame_id, want):
            self.wrong_frame[i] += 1
            return Drop(i, 'frame', f"F/T reading of '{self.names[i]}' is in frame "
                        f"'{frame_id}', expected '{want}' (ft_frames); dropped")
        ahead = stamp_ns - recv_ns
        if self.future_ns and recv_ns > 0 and ahead > self.future_ns:
            self.future[i] += 1
            return Drop(i, 'future', f"F/T reading of '{self.names[i]}' is stamped "
                        f'{ahead * 1e-9:.3f} s ahead of the node clock (> max_future); dropped')
        return None

    def sample(self, stamp_ns: int) -> Optional[Drop]:
        """Judge one sample's order: None to analyse it, else its drop (counted).

        :param stamp_ns: the sample's stamp.
        :return: None, or the drop.
        """
        last = self.last_out_ns
        if last is None or stamp_ns > last:
            return None
        self.out_of_order += 1
        return Drop(-1, 'out_of_order', f'F/T sample stamped {(last - stamp_ns) * 1e-9:.6f} s '
                    'before (or at) the last published one; dropped (outputs never go backwards)')

    def analysed(self, stamp_ns: int) -> None:
        """Record the stamp of the newest sample analysed.

        :param stamp_ns: its stamp.
        """
        self.last_out_ns = int(stamp_ns)

    # -- a chunk (offline) -----------------------------------------------------------------
    def readings(self, stream: np.ndarray, recv_ns: np.ndarray, stamp_ns: np.ndarray,
                 frame_ok: Optional[np.ndarray]) -> np.ndarray:
        """Keep the readings of a chunk that pass the rules (arrival order); count the others.

        :param stream: effector index per reading (m,).
        :param recv_ns: receive times (m,).
        :param stamp_ns: header stamps (m,).
        :param frame_ok: whether each frame id is the expected one, or None (not checked).
        :return: (m,) bool, True where kept.
        """
        n = len(self.names)
        bad = np.zeros(len(stream), bool) if frame_ok is None else ~np.asarray(frame_ok, bool)
        self.wrong_frame += np.bincount(stream[bad], minlength=n)
        if self.future_ns:
            ahead = ~bad & (recv_ns > 0) & (stamp_ns - recv_ns > self.future_ns)
            self.future += np.bincount(stream[ahead], minlength=n)
            bad |= ahead
        return ~bad

    def in_order(self, stamps_ns: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """Judge the order of a chunk of samples (arrival order; out-of-order ones counted).

        A sample is in order when stamped after every earlier sample that will be analysed
        (``valid``: it has its poses) and after the last one analysed before the chunk.

        :param stamps_ns: sample stamps (k,).
        :param valid: (k,) whether each sample can be analysed.
        :return: (k,) bool, True where in order.
        """
        last = self.last_out_ns if self.last_out_ns is not None else np.iinfo(np.int64).min
        before = np.maximum.accumulate(np.concatenate([[last], np.where(valid, stamps_ns,
                                                                        last)[:-1]]))
        in_order = stamps_ns > before
        self.out_of_order += int(np.count_nonzero(~in_order))
        return in_order

    def stream_conditions(self, now_ns: int, max_age_ns: int, values: dict) -> list:
        """Return the F/T streams' state for the diagnostics: which sent nothing yet, the stale ones.

        :param now_ns: node clock now.
        :param max_age_ns: ``max_age`` (0: no staleness).
        :param values: where each stream's age goes (``age_s.<effector>``).
        :return: the conditions (level, message).
        """
        out = []
        missing = [n for n, s in zip(self.names, self.last_stamp_ns) if s is None]
        if missing:
            out.append((WARN, 'no F/T data yet from: ' + ', '.join(missing)))
        stale = []
        for name, s in zip(self.names, self.last_stamp_ns):
            if s is None:
                continue
            values[f'age_s.{name}'] = f'{(now_ns - s) * 1e-9:.4f}'
            if max_age_ns > 0 and now_ns - s > max_age_ns:
                stale.append(name)
        if stale:
            out.append((STALE, 'stale F/T stream(s): ' + ', '.join(stale)
                        + f' (older than max_age={max_age_ns * 1e-9:g} s)'))
        return out
