"""The commands for one checked desired wrench, inside every limit (no ROS).

In order: the desired-wrench limit (``on_limit: scale`` scales the whole set, manipulating
and internal parts alike), the solver, friction auto mode, the command limits (the feedback
correction is cut back first: the commands are affine in the share kept, the limits
convex), the friction check on the commands as sent, the sign. :class:`CommandPath` works
on the distribution engine's parts, which it is given; it holds no state of its own.
"""
from typing import Callable, Optional, Tuple

import numpy as np

from wrench_distribution.core import UnrealisableWrenchError, WrenchDistributionError
from .friction import FrictionStage
from .internal_load import InternalLoadStage
from .limit_stage import LimitStage
from .outcome import Outcome


class CommandPath:
    """Commands for a checked desired wrench (module docstring).

    :param limit: the limits stage (``on_limit``).
    :param internal: the internal-load stage (prescription and feedback correction).
    :param friction: the friction stage (auto mode, the check).
    :param object_axes: commands in object axes.
    :param negate: ``command_sign: -1``.
    """

    def __init__(self, limit: LimitStage, internal: InternalLoadStage, friction: FrictionStage,
                 object_axes: bool, negate: bool) -> None:
        self.limit = limit
        self.internal = internal
        self.friction = friction
        self.object_axes = object_axes
        self.negate = negate

    def commands(self, dist, w: np.ndarray, mono_ns: int, timed_out: bool,
                 corners: Optional[Callable[[], list]] = None) -> Tuple[Outcome, bool]:
        """Commands for a checked desired wrench on a solver.

        :param dist: the solver.
        :param w: the desired wrench (the object's weight added); scaled in place by ``scale``.
        :param mono_ns: steady time (the feedback's staleness, friction).
        :param timed_out: whether the input has timed out (nothing is held then).
        :param corners: the contact subsets the weights mix (``DistributorCache.corners``), for
            friction's auto mode while contacts are in transition; None: not mixed.
        :return: ``(outcome, saturated)``: saturated when a limit cut the commands back.
        """
        lim = self.limit.limits
        over = lim.check_desired(w)
        if over is not None and lim.policy != 'scale':
            return self.limit.hit(over.text, None, 1.0, timed_out), False
        internal, corr = self.internal.now(dist, mono_ns, lim.internal_load)
        scale = 1.0
        if over is not None:
            scale = over.scale
            w *= scale
            internal = None if internal is None else internal * scale
        try:
            out = dist.wrench_commands(w, internal, self.object_axes, check_finite=False)
        except WrenchDistributionError as e:
            cause = 'unrealisable' if isinstance(e, UnrealisableWrenchError) else 'rejected'
            return Outcome(None, cause, f'no command: {e}', 'solver', cause), False
        if self.friction.active and self.friction.options.mode == 'auto':
            applied = self.internal.total(corr)
            out = self.friction.apply(dist, out, self.object_axes, mono_ns, lim, corners and corners(), w,
                                      None if applied is None else applied * scale)
            if out is None:
                return self._friction_fallback(timed_out), False
        if not np.isfinite(out).all():
            return Outcome(None, 'solver_nan', 'solver returned NaN or Inf; no command',
                           'solver', 'rejected_nan'), False
        return self._within_limits(dist, out, over, corr, scale, timed_out)

    def _within_limits(self, dist, out: np.ndarray, over, corr: Optional[np.ndarray], scale: float,
                       timed_out: bool) -> Tuple[Outcome, bool]:
        """Apply the command limits: the correction cut back first, then ``on_limit``."""
        lim = self.limit.limits
        v = lim.check_commands(out)
        saturated = over is not None
        if v is not None and corr is not None:
            delta = dist.internal_wrench(corr, self.object_axes).reshape(-1, 6) * scale
            out, kept = self.limit.back_off(out, delta)
            saturated = True
            corr = corr * kept
            self.internal.feedback.backed_off(corr)
            v = lim.check_commands(out)
        self.internal.apply_correction(corr)
        if v is not None and lim.policy != 'scale':
            return self.limit.hit(v.text, None, 1.0, timed_out), saturated
        if v is not None:
            saturated = True
            out = out * v.scale
            scale *= v.scale
            self.friction.scale_added(v.scale)  # auto mode's load reported as sent
        return self._finish(dist, out, over, v, scale, timed_out), saturated

    def _finish(self, dist, out: np.ndarray, over, v, scale: float, timed_out: bool) -> Outcome:
        """Friction check on the commands as sent, the sign, and the limit report."""
        if self.friction.active:
            self.friction.check_sent(dist.friction_view, out, self.object_axes)
        if self.negate:
            out = -out
        if over is None and v is None:
            self.limit.sent(out)
            return Outcome(out)
        text = '; '.join(x.text for x in (over, v) if x is not None)
        return self.limit.hit(text, out, scale, timed_out)

    def _friction_fallback(self, timed_out: bool) -> Outcome:
        """Auto mode found no internal load: the configured fallback (not a valid input)."""
        why = f'friction: {self.friction.infeasible}'
        out = self.friction.fallback()
        if out is not None and self.negate:
            out = -out
        if timed_out or (out is not None and not self.limit.limits.within(out)):
            out = None
        return Outcome(out, 'friction', why, 'friction', 'friction_infeasible')
