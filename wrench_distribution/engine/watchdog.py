"""The desired wrench's input checks and the input watchdog of the distribution engine (no ROS).

Checks, in order: NaN or Inf (``nan``), another frame than the object frame (``frame``), a
stamp too far ahead of the node clock (``future``). The watchdog counts only *valid*
inputs (used as is, unchanged by any limit) and runs on two clocks: the steady clock
(advances under ``use_sim_time`` without ``/clock``) and the node clock (a fast replay).
"""
import math
from typing import Callable, Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import InputSettings
from wrench_distribution.core.codec import same_frame
from .outcome import Outcome
from .status import OK, STALE


class InputGuard:
    """Input checks and watchdog of one distributor.

    :param settings: the input settings.
    """

    def __init__(self, settings: InputSettings) -> None:
        self.settings = settings
        self.last_valid_ns: Optional[int] = None  # steady clock
        self.last_valid_ros_ns = 0  # node clock
        self.timed_out = False

    def configure(self, settings: InputSettings) -> None:
        """Adopt new settings (runtime parameters); the watchdog's state is kept.

        :param settings: the new settings.
        """
        self.settings = settings

    def refusal(self, wrench: Sequence[float], stamp_ns: int, now_ns: int,
                frame_id: str) -> Optional[Outcome]:
        """Why a desired wrench is refused before any computation, or None.

        :param wrench: its six values.
        :param stamp_ns: its stamp.
        :param now_ns: node clock (0: unknown, no future check).
        :param frame_id: its frame id ('': not checked).
        :return: the refusal, or None.
        """
        if not all(map(math.isfinite, wrench)):
            return Outcome(None, 'nan', 'desired_wrench contains NaN or Inf', key='rejected_nan')
        s = self.settings
        if frame_id and not same_frame(frame_id, s.object_frame):
            return Outcome(None, 'frame', f"desired_wrench frame '{frame_id}' is not the "
                           f"object frame '{s.object_frame}'", key='rejected_frame')
        ahead = stamp_ns - now_ns
        if s.max_future_ns > 0 and now_ns > 0 and ahead > s.max_future_ns:
            return Outcome(None, 'future', f'desired_wrench stamp is {ahead * 1e-9:.3f} s '
                           'ahead of the node clock (> max_future)', key='rejected_future')
        return None

    def valid(self, mono_ns: int, now_ns: int) -> None:
        """Record a valid input (it resets the watchdog).

        :param mono_ns: steady clock.
        :param now_ns: node clock.
        """
        self.last_valid_ns = mono_ns
        self.last_valid_ros_ns = now_ns
        self.timed_out = False

    def restart(self, mono_ns: int, now_ns: int) -> None:
        """Start the timeout afresh, as from a valid input now (the node listens again).

        Before the first valid input nothing changes: the watchdog still waits for one.

        :param mono_ns: steady clock.
        :param now_ns: node clock.
        """
        if self.last_valid_ns is not None:
            self.valid(mono_ns, now_ns)

    def watchdog(self, mono_ns: int, now_ns: int) -> Optional[str]:
        """Check the input timeout (valid inputs only count).

        :param mono_ns: steady clock.
        :param now_ns: node clock (a fast replay also counts).
        :return: None while fresh (or disabled, or before the first valid input);
            ``'timeout'`` on the check that trips it, then ``'zero'`` or ``'stop'``
            (the policy) on the following ones.
        """
        timeout_ns = self.settings.timeout_ns
        if timeout_ns <= 0 or self.last_valid_ns is None:
            return None
        if (mono_ns - self.last_valid_ns <= timeout_ns
                and now_ns - self.last_valid_ros_ns <= timeout_ns):
            return None
        if not self.timed_out:
            self.timed_out = True
            return 'timeout'
        return self.settings.on_timeout

    def action_text(self) -> str:
        """Say what the timeout policy does (logs and diagnostics)."""
        return {'zero': 'publishing zero wrenches', 'stop': 'stopped publishing',
                'hold_object_weight': "holding the object's weight"}[self.settings.on_timeout]

    def tick(self, mono_ns: int, now_ns: int, stop: Callable[[], Optional[np.ndarray]]) -> Outcome:
        """One watchdog check, as the node acts on it.

        :param mono_ns: steady clock.
        :param now_ns: node clock.
        :param stop: the engine's stop: what ``on_timeout`` publishes (None: nothing).
        :return: the commands to publish after a timeout (``zero``, ``hold_object_weight``) or None; on
            the check that trips, the cause ``timeout`` with its message and counter
            ``timeouts``.
        """
        action = self.watchdog(mono_ns, now_ns)
        out = Outcome(None)
        if action == 'timeout':
            out = Outcome(None, 'timeout', 'desired_wrench timed out (> '
                          f'{self.settings.timeout_ns * 1e-9:g} s): {self.action_text()}',
                          key='timeouts')
            action = self.settings.on_timeout
        if action in ('zero', 'hold_object_weight'):
            out.commands = stop()
            if out.commands is None and out.cause == 'timeout':
                out.message += (' impossible (no contacts, no orientation of the object, or a weight '
                                'they cannot carry): nothing published')
        return out

    def conditions(self) -> list:
        """Return the input concern's persistent conditions."""
        if self.timed_out:
            return [(STALE, 'input timeout: ' + self.action_text())]
        if self.last_valid_ns is None:
            return [(OK, 'waiting for desired_wrench')]
        return []

    def values(self, mono_ns: int) -> dict:
        """Return the summary values: state, policy, input age."""
        values = {'state': 'timeout' if self.timed_out else
                  ('waiting' if self.last_valid_ns is None else 'running'),
                  'on_timeout': self.settings.on_timeout}
        if self.last_valid_ns is not None:
            values['input_age_s'] = f'{(mono_ns - self.last_valid_ns) * 1e-9:.3f}'
        return values
