"""The distribution engine: desired object wrench -> one wrench command per effector (no ROS).

One object owns what the distributor does with a desired wrench: the input checks, the
solver cache (:mod:`.cache`), the internal-load prescription (:mod:`.prescription`), the
internal-load feedback (:mod:`.feedback`), friction (:mod:`.friction`), the command limits
(``core/limits.py``, policy ``on_limit``) and the input watchdog. The distributor node
converts messages and calls :meth:`DistributionEngine.step`, which returns the commands to
publish or the reason for none.

Per desired wrench, in order: NaN or Inf (``nan``), another frame (``frame``), a stamp too
far ahead of the clock (``future``), no contacts (``no_contacts``), a rejected prescription
(``internal_load``), no object orientation for ``hold_object_weight`` (``no_contacts``);
the object's weight added (:mod:`.holding`); then the commands: desired-wrench limit, solver,
friction auto mode, command limits (the feedback correction is cut back first), the friction
check on the commands as sent (scaled or not), the sign. Only a desired wrench whose commands
were sent unchanged by any limit is a *valid input*: it alone resets the watchdog.
"""
from dataclasses import dataclass
import math
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.config import (build_core_objects, DistributorConfig,
                                        load_distributor_config, parse_handles,
                                        per_effector_limits)
from wrench_distribution.config.safety import check_runtime_change, defaults_in_force, OPT_IN
from wrench_distribution.core import UnrealisableWrenchError, WrenchDistributionError
from wrench_distribution.core.codec import format_numbers, same_frame, seconds_to_ns, zero_below_resolution
from wrench_distribution.core.limits import CommandLimits
from .cache import DistributorCache
from .feedback import bounded, FeedbackGains, InternalLoadFeedback
from .friction import FrictionStage
from .holding import ObjectWeight
from .prescription import InternalLoadPrescription
from .status import ERROR, OK, regime_word, STALE, WARN

#: The distributor's diagnostic concerns, one status each, in order.
CONCERNS = ('input', 'contacts', 'internal load', 'solver', 'limits', 'clock', 'friction',
            'feedback', 'outputs')
#: Bisection steps when a limit cuts the feedback correction back (2**-30 of it is left).
BACKOFF_STEPS = 30


def limits_from(cfg: dict) -> CommandLimits:
    """Return the command limits of a validated configuration.

    :param cfg: validated distributor parameters.
    :return: the limits.
    """
    n = len(cfg['effectors'])
    return CommandLimits(list(cfg['effectors']), per_effector_limits(cfg['force_limits'], n),
                         per_effector_limits(cfg['torque_limits'], n),
                         cfg['desired_force_limit'], cfg['desired_torque_limit'],
                         cfg['internal_load_limit'], cfg['on_limit'])


def gains_from(cfg: dict) -> FeedbackGains:
    """Return the feedback gains of a validated configuration.

    :param cfg: validated distributor parameters.
    :return: the gains.
    """
    return FeedbackGains(list(cfg['feedback_kp']), list(cfg['feedback_ki']),
                         cfg['feedback_integral_limit'], cfg['feedback_correction_limit'],
                         cfg['feedback_timeout'])


def prescription_of(cfg: dict) -> InternalLoadPrescription:
    """Return the internal-load prescription the parameters ask for (may be none).

    :param cfg: validated distributor parameters.
    :return: the prescription.
    """
    prescription = InternalLoadPrescription()
    if cfg['internal_load']:
        prescription.set_coords(cfg['internal_load'])
    elif cfg['internal_load_handles']:
        prescription.set_handles(parse_handles(cfg['internal_load_handles']))
    return prescription


@dataclass
class Outcome:
    """What one desired wrench produced.

    :param commands: (n, 6) commands to publish, or None.
    :param cause: None when the input was used as is; else the drop cause (``nan``,
        ``frame``, ``future``, ``no_contacts``, ``internal_load``, ``unrealisable``,
        ``rejected``, ``solver_nan``, ``limit``, ``friction``).
    :param message: what happened, with the figures.
    :param concern: the diagnostics concern.
    :param key: the legacy counter key.
    """

    commands: Optional[np.ndarray]
    cause: Optional[str] = None
    message: str = ''
    concern: str = 'input'
    key: str = ''

    @property
    def valid(self) -> bool:
        """Tell whether the input was used as is (it resets the watchdog)."""
        return self.cause is None


class DistributionEngine:
    """Desired wrench -> commands, with prescription, feedback, friction, limits, watchdog.

    :param cfg: validated distributor parameters (``validate_params('distributor', ...)``).
    :param typed: the typed configuration already built from ``cfg`` (None: built here);
        the command line passes the one it builds from a problem file
        (:func:`.problem.engine_for_problem`).
    :raises ConfigError: when the core objects cannot be built (message names the cause).
    """

    def __init__(self, cfg: dict, typed: Optional[DistributorConfig] = None) -> None:
        typed = load_distributor_config(cfg) if typed is None else typed
        #: the typed configuration (topics, contact frames, core objects)
        self.config = typed
        self.cfg = cfg
        self.names = list(cfg['effectors'])
        self.n = len(self.names)
        self.object_frame = cfg['object_frame']
        self.object_axes = cfg['command_frame'] == 'object'
        self.negate = cfg['command_sign'] == -1
        self.limits = limits_from(cfg)
        self.prescription = prescription_of(cfg)
        self.source = 'parameter' if self.prescription.kind != 'none' else 'none'
        self.friction = FrictionStage(cfg, cfg['friction_mode'])
        self.weight = ObjectWeight(cfg)  # hold_object_weight (engine/holding.py)
        self.feedback = InternalLoadFeedback(gains_from(cfg), cfg['internal_load_feedback'])
        self.cache = DistributorCache(self.names, typed.contact_types, typed.object_model,
                                      typed.options, typed.contact_pose_tolerance,
                                      contact_extras=self.friction.extras)
        self.lam: Optional[np.ndarray] = None
        self.lam_error: Optional[str] = None
        self._internal: Optional[np.ndarray] = None
        self._w = np.zeros(6)
        self.last_out: Optional[np.ndarray] = None
        self.limit_state: Optional[str] = None
        self.applied_correction: Optional[np.ndarray] = None
        self._saturated = False
        self._corr_key: tuple = (None, None, None, None)  # what the cached correction was made of
        self._corr_cached: tuple = (None, None)
        self.timeout_ns = seconds_to_ns(cfg['input_timeout'])
        self.future_ns = seconds_to_ns(cfg['max_future'])
        self.on_timeout = cfg['on_timeout']
        self.last_valid_ns: Optional[int] = None  # steady clock
        self.last_valid_ros_ns = 0  # node clock
        self.timed_out = False

    # -- internal load ----------------------------------------------------------------
    def internal_problem(self, dist, lam: Optional[np.ndarray],
                         limits: Optional[CommandLimits] = None) -> Optional[str]:
        """Why a resolved internal load cannot be used (limit, or commands over a limit).

        :param dist: the solver.
        :param lam: the coordinates, or None.
        :param limits: the limits to check against (None: the current ones).
        :return: the reason, or None.
        """
        if lam is None:
            return None
        limits = self.limits if limits is None else limits
        why = limits.check_internal_load(lam)
        if why is not None:
            return why
        alone = dist.internal_wrench(lam, self.object_axes).reshape(self.n, 6)
        v = limits.check_commands(alone)
        return None if v is None else f'internal load alone exceeds the command limits: {v.text}'

    def resolve(self, prescription: InternalLoadPrescription, dist,
                limits: Optional[CommandLimits] = None) -> Optional[np.ndarray]:
        """Resolve a prescription and check it against the limits (None: the current ones).

        :param prescription: the prescription.
        :param dist: the solver.
        :param limits: the limits to check against.
        :return: the coordinates, or None for no internal load.
        :raises ValueError: with the reason when it does not fit or is over a limit.
        """
        lam = prescription.resolve(dist)
        why = self.internal_problem(dist, lam, limits)
        if why is not None:
            raise ValueError(why)
        return lam

    def rebuilt(self, mono_ns: int) -> Optional[str]:
        """Adopt the solver the cache has just built (the contacts changed).

        :param mono_ns: steady time.
        :return: None, or why the prescription is rejected on the new solver.
        """
        dist = self.cache.distributor
        self.feedback.set_basis(dist.basis_names, mono_ns)
        self.friction.feedback.contacts_changed(mono_ns)
        try:
            self.lam = self.resolve(self.prescription, dist)
            self.lam_error = None
        except ValueError as e:
            self.lam = None
            self.lam_error = f'internal load prescription rejected: {e}'
        self._refresh()
        return self.lam_error

    def _refresh(self) -> None:
        """Precompute the prescribed internal load's stacked wrench (the fast path)."""
        dist = self.cache.distributor
        self._internal = None
        if dist is not None and self.lam_error is None and self.lam is not None:
            self._internal = dist.internal_wrench(self.lam, self.object_axes)

    def offer_internal_load(self, names: Optional[Sequence[str]],
                            values: np.ndarray) -> Optional[str]:
        """Take a prescription from the ``internal_load`` topic.

        :param names: the message's labels (handles or the basis), or None (coordinates).
        :param values: the values.
        :return: None when adopted, else why it was rejected (the previous one stays).
        """
        candidate = InternalLoadPrescription()
        if not np.all(np.isfinite(values)):
            return 'internal_load message contains NaN or Inf'
        dist = self.cache.distributor
        if names is not None and (dist is None or names != list(dist.basis_names)):
            if len(names) != values.size:
                return f'internal_load message has {values.size} values but {len(names)} labels'
            candidate.set_handles(dict(zip(names, values.tolist())))
        else:
            candidate.set_coords(values)
        why = self.limits.check_internal_load(values)
        if why is not None:
            return f'internal_load message rejected: {why}'
        if dist is not None:
            try:
                lam = self.resolve(candidate, dist)
            except ValueError as e:
                return f'internal_load message rejected: {e}'
            self.lam, self.lam_error = lam, None
        self.prescription = candidate
        self.source = 'topic'
        self._refresh()
        return None

    def reference(self) -> Optional[np.ndarray]:
        """Return the internal load commanded before the feedback correction.

        :return: prescription plus auto mode's added load (coordinates), or None.
        """
        dist = self.cache.distributor
        if dist is None:
            return None
        lam = np.zeros(len(dist.basis_names)) if self.lam is None else self.lam
        added = self.friction.added
        return lam if added is None or added.shape != lam.shape else lam + added

    def commanded(self) -> Optional[np.ndarray]:
        """Return the internal load last commanded: reference plus applied correction."""
        ref = self.reference()
        corr = self.applied_correction
        return ref if ref is None or corr is None or corr.shape != ref.shape else ref + corr

    def offer_measurement(self, names: Optional[Sequence[str]], values: np.ndarray,
                          mono_ns: int, clock_ns: int = 0) -> Optional[str]:
        """Take a measured internal load (the analyzer's read-out) for the feedback.

        :param names: the layout's labels (must be the basis names), or None.
        :param values: the coordinates.
        :param mono_ns: steady receive time (staleness).
        :param clock_ns: node clock (the PI's time; 0: unknown, steady time used).
        :return: None, or why it was refused (counted by the feedback).
        """
        if self.cache.distributor is None:
            return 'no contacts yet: measurement ignored'
        why = self.feedback.measure(names, np.asarray(values, float), self.reference(),
                                    mono_ns, self._saturated, clock_ns)
        if why is None:
            self._internal_now(mono_ns)  # the product E u here, off the desired wrench's path
        return why

    # -- the per-message path -----------------------------------------------------------
    def step(self, stamp_ns: int, wrench: Sequence[float], now_ns: int, mono_ns: int,
             frame_id: str = '', contacts_problem: Optional[str] = None) -> Outcome:
        """Commands for one desired wrench, or the reason for none.

        :param stamp_ns: the input's stamp.
        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame about the CoM.
        :param now_ns: node clock (0: unknown, no future check).
        :param mono_ns: steady clock (the watchdog's).
        :param frame_id: the input's frame id ('' : not checked).
        :param contacts_problem: why the contacts are not usable now, or None.
        :return: the outcome.
        """
        w = self._w
        w[:] = wrench
        if not all(map(math.isfinite, wrench)):
            return Outcome(None, 'nan', 'desired_wrench contains NaN or Inf', key='rejected_nan')
        if frame_id and not same_frame(frame_id, self.object_frame):
            return Outcome(None, 'frame', f"desired_wrench frame '{frame_id}' is not the "
                           f"object frame '{self.object_frame}'", key='rejected_frame')
        ahead = stamp_ns - now_ns
        if self.future_ns > 0 and now_ns > 0 and ahead > self.future_ns:
            return Outcome(None, 'future', f'desired_wrench stamp is {ahead * 1e-9:.3f} s '
                           'ahead of the node clock (> max_future)', key='rejected_future')
        if contacts_problem is not None or self.cache.distributor is None:
            return Outcome(None, 'no_contacts', f'no command: {contacts_problem or "no contacts"}',
                           'contacts', 'no_contacts')
        if self.lam_error is not None:
            return Outcome(None, 'internal_load', self.lam_error, 'internal load',
                           'rejected_internal_load')
        if self.weight.problem() is not None:
            return Outcome(None, 'no_contacts', self.weight.problem(), 'contacts', 'no_contacts')
        self.weight.add_to(w)  # the limits and the solver see what the effectors must apply
        outcome = self._commands(w, mono_ns)
        if outcome.valid:
            self.last_valid_ns = mono_ns
            self.last_valid_ros_ns = now_ns
            self.timed_out = False
        return outcome

    def _internal_now(self, mono_ns: int) -> tuple:
        """Stacked internal wrench (prescription + feedback correction) and the correction."""
        internal = self._internal
        dist = self.cache.distributor
        feedback = self.feedback
        if not feedback.active or len(feedback.names) != dist.internal_dimension:
            return internal, None
        corr = feedback.current(mono_ns)
        if not corr.any():
            return internal, None
        key = self._corr_key
        if key[0] is corr and key[1] is self.lam and key[2] is internal and key[3] is dist:
            return self._corr_cached  # same correction as the last message: no new product
        lam = self.lam if self.lam is not None else np.zeros(corr.size)
        bound = self.limits.internal_load
        corr = bounded(lam + corr, -bound, bound) - lam  # never beyond internal_load_limit
        extra = dist.internal_basis(self.object_axes) @ corr
        self._corr_key = (self.feedback.correction, self.lam, internal, dist)
        self._corr_cached = (extra if internal is None else internal + extra), corr
        return self._corr_cached

    def _commands(self, w: np.ndarray, mono_ns: int) -> Outcome:
        """Commands for a checked desired wrench, inside every limit (module docstring)."""
        lim = self.limits
        dist = self.cache.distributor
        over = lim.check_desired(w)
        if over is not None and lim.policy != 'scale':
            return self._limit_hit(over.text, None)
        internal, corr = self._internal_now(mono_ns)
        scale = 1.0
        if over is not None:
            scale = over.scale  # the whole set scales: manipulating and internal parts alike
            w *= scale
            internal = None if internal is None else internal * scale
        try:
            out = dist.wrench_commands(w, internal, self.object_axes, check_finite=False)
        except WrenchDistributionError as e:
            cause = 'unrealisable' if isinstance(e, UnrealisableWrenchError) else 'rejected'
            return Outcome(None, cause, f'no command: {e}', 'solver', cause)
        if self.friction.active and self.friction.options.mode == 'auto':
            out = self.friction.apply(dist, out, self.object_axes, mono_ns, lim)
            if out is None:
                return self._friction_fallback()
        if not np.isfinite(out).all():
            return Outcome(None, 'solver_nan', 'solver returned NaN or Inf; no command',
                           'solver', 'rejected_nan')
        v = lim.check_commands(out)
        self._saturated = over is not None
        if v is not None and corr is not None:
            out, corr = self._back_off(out, corr, dist, scale)
            v = lim.check_commands(out)
        self.applied_correction = corr
        if v is not None and lim.policy != 'scale':
            return self._limit_hit(v.text, None)
        if v is not None:
            self._saturated = True
            out = out * v.scale
            scale *= v.scale
            if self.friction.added is not None:  # report auto mode's load as sent
                self.friction.added = self.friction.added * v.scale
        return self._finish(out, over, v, scale)

    def _back_off(self, out: np.ndarray, corr: np.ndarray, dist, scale: float) -> tuple:
        """Cut the feedback correction back until the commands are inside the limits.

        The commands are affine in the share ``a`` of the correction kept, and the limits
        are convex, so the feasible shares are an interval [0, a*]: a bisection finds a*.

        :return: ``(commands, correction kept)``.
        """
        delta = dist.internal_wrench(corr, self.object_axes).reshape(self.n, 6) * scale
        base = out - delta
        low, high = 0.0, 1.0
        for _ in range(BACKOFF_STEPS):
            mid = 0.5 * (low + high)
            if self.limits.check_commands(base + mid * delta) is None:
                low = mid
            else:
                high = mid
        self._saturated = True
        self.feedback.backed_off(corr * low)
        return base + low * delta, corr * low

    def _finish(self, out: np.ndarray, over, v, scale: float) -> Outcome:
        """Friction check on the commands as sent, the sign, and the limit report."""
        if self.friction.active:
            self.friction.check_sent(self.cache.distributor, out, self.object_axes)
        if self.negate:
            out = -out
        if over is None and v is None:
            self.limit_state = None
            self.last_out = out
            return Outcome(out)
        text = '; '.join(x.text for x in (over, v) if x is not None)
        return self._limit_hit(text, out, scale)

    def _friction_fallback(self) -> Outcome:
        """Auto mode found no internal load: the configured fallback (not a valid input)."""
        why = f'friction: {self.friction.infeasible}'
        out = self.friction.fallback()
        if out is not None and self.negate:
            out = -out
        if self.timed_out or (out is not None and not self.limits.within(out)):
            out = None
        return Outcome(out, 'friction', why, 'friction', 'friction_infeasible')

    def _limit_hit(self, text: str, scaled: Optional[np.ndarray],
                   scale: float = 1.0) -> Outcome:
        """Apply on_limit after a violation: say what was sent (never beyond a limit)."""
        policy = self.limits.policy
        if self.timed_out:
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

    def zeros(self) -> np.ndarray:
        """Return the zero command set (what ``on_timeout: zero`` publishes)."""
        return np.zeros((self.n, 6))

    # -- watchdog ------------------------------------------------------------------------
    def watchdog(self, mono_ns: int, now_ns: int) -> Optional[str]:
        """Check the input timeout (valid inputs only count).

        :param mono_ns: steady clock.
        :param now_ns: node clock (a fast replay also counts).
        :return: None while fresh (or disabled, or before the first valid input);
            ``'timeout'`` on the check that trips it, then ``'zero'`` or ``'stop'``
            (the policy) on the following ones.
        """
        if self.timeout_ns <= 0 or self.last_valid_ns is None:
            return None
        if (mono_ns - self.last_valid_ns <= self.timeout_ns
                and now_ns - self.last_valid_ros_ns <= self.timeout_ns):
            return None
        if not self.timed_out:
            self.timed_out = True
            return 'timeout'
        return self.on_timeout

    # -- runtime parameters ------------------------------------------------------------------
    def plan(self, new: dict, touched: set, prescription_changed: bool) -> dict:
        """Check a parameter change without applying it.

        :param new: the full validated parameter set after the change.
        :param touched: the names changed.
        :param prescription_changed: whether the internal-load parameters changed.
        :return: what :meth:`adopt` needs.
        :raises ValueError: when the change does not fit (message names the cause);
            :class:`~wrench_distribution.config.safety.UnsafeChangeError` when it would make
            the node less safe (a higher limit, a relaxed guard).
        """
        check_runtime_change(self.cfg, new, touched)
        limits = limits_from(new)
        prescription = prescription_of(new) if prescription_changed else self.prescription
        options = None
        dist = self.cache.distributor
        if 'torque_share' in touched:
            _, _, options = build_core_objects(new)
            if dist is not None:
                dist = self.cache.try_options(options)
        lam = self.resolve(prescription, dist, limits) if dist is not None else None
        gains = gains_from(new)
        if dist is not None:
            gains.per_element(len(dist.basis_names))  # raises naming the parameter
        return {'new': new, 'limits': limits, 'prescription': prescription, 'gains': gains,
                'options': options, 'dist': dist, 'lam': lam, 'il': prescription_changed}

    def adopt(self, plan: dict, mono_ns: int) -> None:
        """Apply a checked parameter change.

        :param plan: the result of :meth:`plan`.
        :param mono_ns: steady time (bumpless switching of the feedback).
        """
        new = plan['new']
        if plan['options'] is not None:
            self.cache.adopt_options(plan['options'], plan['dist'])
            if plan['dist'] is not None:
                self.feedback.set_basis(plan['dist'].basis_names, mono_ns)
                self.friction.feedback.contacts_changed(mono_ns)
        self.limits = plan['limits']
        self.prescription = plan['prescription']
        if plan['il']:
            self.source = 'parameter' if self.prescription.kind != 'none' else 'none'
        if plan['dist'] is not None:
            self.lam, self.lam_error = plan['lam'], None
        self._refresh()
        self.feedback.set_gains(plan['gains'])
        self.feedback.set_enabled(new['internal_load_feedback'], mono_ns)
        self.friction.set_feedback(new, mono_ns)
        self.cfg = new
        self.timeout_ns = seconds_to_ns(new['input_timeout'])
        self.future_ns = seconds_to_ns(new['max_future'])
        self.on_timeout = new['on_timeout']
        if self.last_out is not None and not self.limits.within(self.last_out):
            self.last_out = None

    # -- diagnostics ---------------------------------------------------------------------------
    def report(self, mono_ns: int) -> tuple:
        """Key/values of the summary status and per concern.

        :param mono_ns: steady time (input age).
        :return: ``(values, per-concern values)``.
        """
        lim = self.limits
        values = {'state': 'timeout' if self.timed_out else
                  ('waiting' if self.last_valid_ns is None else 'running'),
                  'on_timeout': self.on_timeout,
                  'internal_load_prescription': self.prescription.describe(),
                  'internal_load_source': self.source, 'on_limit': lim.policy}
        if self.last_valid_ns is not None:
            values['input_age_s'] = f'{(mono_ns - self.last_valid_ns) * 1e-9:.3f}'
        dist = self.cache.distributor
        if dist is not None:
            values['regime'] = dist.regime.name
            values['regime_reasons'] = ', '.join(dist.regime.reasons)
            values['regime_message'] = regime_word(dist.regime)
            values['basis'] = ';'.join(dist.basis_names)
            values['virtual_masses'] = format_numbers(dist.virtual_masses)
            if self.lam is not None:
                values['internal_load'] = format_numbers(self.lam)
        per = {'limits': {'force_limits': ', '.join(f'{x:g}' for x in lim.force),
                          'torque_limits': ', '.join(f'{x:g}' for x in lim.torque),
                          'desired_force_limit': f'{lim.desired_force:g}',
                          'desired_torque_limit': f'{lim.desired_torque:g}',
                          'internal_load_limit': f'{lim.internal_load:g}',
                          OPT_IN: str(bool(self.cfg.get(OPT_IN, False))).lower(),
                          'defaults_in_force': ', '.join(defaults_in_force(self.cfg)) or 'none'},
               'internal load': {'source': self.source,
                                 'prescription': self.prescription.describe()},
               'feedback': self.feedback_values()}
        values.update(self.friction.values(mono_ns))
        values.update(self.weight.values())
        return values, per

    def conditions(self, mono_ns: int) -> dict:
        """Return the engine's persistent conditions per concern (the node adds its own).

        :param mono_ns: steady time (the feedback's staleness is checked here too, so a
            missing measurement shows without any desired wrench).
        :return: ``{concern: [(level, message)]}`` over :data:`CONCERNS`.
        """
        cond: dict = {c: [] for c in CONCERNS}
        if self.lam_error:
            cond['internal load'].append((ERROR, self.lam_error))
        if self.timed_out:
            cond['input'].append((STALE, 'input timeout: ' + (
                'publishing zero wrenches' if self.on_timeout == 'zero' else 'stopped publishing')))
        elif self.last_valid_ns is None:
            cond['input'].append((OK, 'waiting for desired_wrench'))
        if self.limit_state is not None:
            cond['limits'].append((ERROR, f'last desired wrench over a limit: {self.limit_state}'))
        cond['limits'].extend(self.safety_conditions())
        friction = self.friction.condition() if self.friction.active else None
        if friction is not None:
            cond['friction'].append(friction)
        friction = self.friction.feedback_condition(mono_ns)
        if friction is not None:
            cond['friction'].append(friction)
        self.feedback.current(mono_ns)
        if self.feedback.enabled and self.feedback.status() != 'closed loop':
            cond['feedback'].append((WARN, f'internal-load feedback {self.feedback.status()}'))
        return cond

    def safety_conditions(self) -> list:
        """Return the WARNs of the limits status: the opt-in in force, package default limits.

        :return: ``[(WARN, message)]``, empty when neither applies.
        """
        out = []
        if self.cfg.get(OPT_IN, False):
            out.append((WARN, f'{OPT_IN} is true: limits may be raised and guards relaxed at '
                        'runtime (lab bench only)'))
        defaults = defaults_in_force(self.cfg)
        if defaults:
            out.append((WARN, 'package default limits in force (collaborative-arm values; set '
                        f'them for this robot): {", ".join(defaults)}'))
        return out

    def feedback_values(self) -> dict:
        """Commanded, measured and correction per basis element, and the loop's state."""
        fb = self.feedback
        out = {'state': fb.status()}
        shown = [None if a is None else zero_below_resolution([float(x) for x in a])
                 for a in (self.commanded(), fb.measured, self.applied_correction)]
        commanded, measured, applied = shown
        for j, name in enumerate(fb.names):
            def fig(array, j=j):
                return '-' if array is None or len(array) <= j else f'{array[j]:.6g}'
            out[f'{name}'] = (f'commanded {fig(commanded)}, measured {fig(measured)}, '
                              f'correction {fig(applied)}')
        return out
