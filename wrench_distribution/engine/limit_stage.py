"""The command limits of the distribution engine and what ``on_limit`` does (no ROS).

Nothing beyond a limit is ever published: :meth:`LimitStage.hit` applies the policy
(``hold`` the last valid commands, ``zero``, or ``scale`` the whole set) and refuses any
result that would still be over a limit; :meth:`LimitStage.back_off` cuts the feedback
correction back first (the commands are affine in the share kept, the limits convex).
"""
from typing import Optional

import numpy as np

from wrench_distribution.core.limits import CommandLimits
from .outcome import Outcome
from .status import ERROR, WARN

#: Bisection steps when a limit cuts the feedback correction back (2**-30 of it is left).
BACKOFF_STEPS = 30


class LimitStage:
    """The limits in force, the last valid commands and the last violation.

    :param limits: the configured limits.
    :param n: number of effectors.
    """

    def __init__(self, limits: CommandLimits, n: int) -> None:
        self.limits = limits
        self.n = n
        self.last_out: Optional[np.ndarray] = None
        self.limit_state: Optional[str] = None

    def configure(self, limits: CommandLimits) -> None:
        """Adopt new limits; last valid commands now over a limit are scaled into them.

        ``on_limit: hold`` then still has something to hold (the whole set cut uniformly, as
        ``scale`` does): lowering a limit never leaves the contacts with nothing.

        :param limits: the new limits.
        """
        self.limits = limits
        if self.last_out is not None and not limits.within(self.last_out):
            over = limits.check_commands(self.last_out)
            held = self.last_out * (over.scale if over is not None else 1.0)
            self.last_out = held if limits.within(held) else None

    def sent(self, out: np.ndarray) -> None:
        """Record commands sent unchanged by any limit (what ``hold`` holds).

        :param out: the commands as published.
        """
        self.limit_state = None
        self.last_out = out

    def hit(self, text: str, scaled: Optional[np.ndarray], scale: float,
            timed_out: bool) -> Outcome:
        """Apply ``on_limit`` after a violation: say what was sent (never beyond a limit).

        :param text: the violation, with its figures.
        :param scaled: the scaled commands (policy ``scale``), or None.
        :param scale: the scale applied.
        :param timed_out: whether the input has timed out (then nothing is published).
        :return: the outcome (cause ``limit``).
        """
        policy = self.limits.policy
        if timed_out:
            action, out = 'input timed out: nothing published', None
        elif policy == 'scale':
            action, out = f'whole command set scaled by {scale:.6g}', scaled
        elif policy == 'zero':
            action, out = 'zero wrenches published', np.zeros((self.n, 6))
        elif self.last_out is not None:
            action, out = 'last valid commands held', self.last_out
        else:
            action, out = 'no valid command yet: nothing published', None
        self.limit_state = f'{text} (on_limit={policy}: {action})'
        if out is not None and not self.limits.within(out):  # cannot happen; never publish
            out = None
        return Outcome(out, 'limit', f'limit exceeded: {self.limit_state}', 'limits')

    def back_off(self, out: np.ndarray, delta: np.ndarray) -> tuple:
        """Cut a correction's commands ``delta`` back until ``out`` is inside the limits.

        The commands are affine in the share ``a`` of the correction kept, and the limits
        are convex, so the feasible shares are an interval [0, a*]: a bisection finds a*.

        :param out: (n, 6) commands with the whole correction.
        :param delta: (n, 6) the correction's part of them.
        :return: ``(commands, share kept)``.
        """
        base = out - delta
        low, high = 0.0, 1.0
        for _ in range(BACKOFF_STEPS):
            mid = 0.5 * (low + high)
            if self.limits.check_commands(base + mid * delta) is None:
                low = mid
            else:
                high = mid
        return base + low * delta, low

    def conditions(self, opt_in: bool, defaults: tuple) -> list:
        """Return the limits concern: the last violation, the opt-in, package defaults.

        :param opt_in: ``allow_unsafe_runtime_changes``.
        :param defaults: ``name=value`` of each limit at its package default.
        :return: ``[(level, message)]``.
        """
        cond = []
        if self.limit_state is not None:
            cond.append((ERROR, f'last desired wrench over a limit: {self.limit_state}'))
        return cond + safety_conditions(opt_in, defaults)

    def values(self, opt_in: bool, defaults: tuple) -> dict:
        """Return the limits concern's key/values."""
        lim = self.limits
        from wrench_distribution.config.safety import OPT_IN
        return {'force_limits': ', '.join(f'{x:g}' for x in lim.force),
                'torque_limits': ', '.join(f'{x:g}' for x in lim.torque),
                'desired_force_limit': f'{lim.desired_force:g}',
                'desired_torque_limit': f'{lim.desired_torque:g}',
                'internal_load_limit': f'{lim.internal_load:g}',
                OPT_IN: str(opt_in).lower(), 'defaults_in_force': ', '.join(defaults) or 'none'}


def safety_conditions(opt_in: bool, defaults: tuple) -> list:
    """Return the WARNs of the limits status: the opt-in in force, package default limits.

    :param opt_in: ``allow_unsafe_runtime_changes``.
    :param defaults: ``name=value`` of each limit at its package default.
    :return: ``[(WARN, message)]``, empty when neither applies.
    """
    from wrench_distribution.config.safety import OPT_IN
    out = []
    if opt_in:
        out.append((WARN, f'{OPT_IN} is true: limits may be raised and guards relaxed at '
                    'runtime (lab bench only)'))
    if defaults:
        out.append((WARN, 'package default limits in force (collaborative-arm values; set '
                    f'them for this robot): {", ".join(defaults)}'))
    return out
