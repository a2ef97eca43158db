"""The distribution engine: desired object wrench -> one wrench command per effector (no ROS).

One object owns what the distributor does with a desired wrench, composed of one part per
responsibility: the input checks and watchdog (:mod:`.watchdog`), the solver cache
(:mod:`.cache`), the internal load, prescribed and fed back (:mod:`.internal_load`),
friction (:mod:`.friction`), the object's weight (:mod:`.holding`) and the command limits
(:mod:`.limit_stage`, policy ``on_limit``). It reads the typed settings of
:class:`~wrench_distribution.config.DistributorConfig`. The distributor node converts
messages and calls :meth:`DistributionEngine.step`, whose :class:`~.outcome.Outcome` holds
everything it publishes for that message.

Per desired wrench, in order: NaN or Inf (``nan``), another frame (``frame``), a stamp too
far ahead of the clock (``future``), no contacts (``no_contacts``), a rejected prescription
(``internal_load``), no object orientation for ``hold_object_weight`` (``no_contacts``);
the object's weight added (:mod:`.holding`); then the commands: desired-wrench limit, solver,
friction auto mode, command limits (the feedback correction is cut back first), the friction
check on the commands as sent (scaled or not), the sign. Only a desired wrench whose commands
were sent unchanged by any limit is a *valid input*: it alone resets the watchdog.
"""
from typing import Optional, Sequence, Union

import numpy as np

from wrench_distribution.config import DistributorConfig, load_distributor_config
from wrench_distribution.core import UnrealisableWrenchError, WrenchDistributionError
from . import distribution_params, distribution_report as reporting
from .cache import DistributorCache
from .friction import FrictionStage
from .holding import ObjectWeight
from .internal_load import InternalLoadStage
from .limit_stage import LimitStage, safety_conditions
from .outcome import ContactUpdate, Outcome, OutputStage, Refusal, Report
from .status import ERROR, WARN
from .watchdog import InputGuard

#: The distributor's diagnostic concerns, one status each, in order.
CONCERNS = reporting.CONCERNS
__all__ = ['CONCERNS', 'DistributionEngine', 'Outcome']


class DistributionEngine:
    """Desired wrench -> commands, with prescription, feedback, friction, limits, watchdog.

    :param config: the typed configuration, or validated distributor parameters (a dict,
        read with :func:`~wrench_distribution.config.load_distributor_config`).
    :param typed: the typed configuration when ``config`` is a dict already read (the
        command line builds it from a problem file: :func:`.problem.engine_for_problem`).
    :raises ConfigError: when the core objects cannot be built (message names the cause).
    """

    def __init__(self, config: Union[DistributorConfig, dict],
                 typed: Optional[DistributorConfig] = None) -> None:
        if typed is None:
            typed = config if isinstance(config, DistributorConfig) else \
                load_distributor_config(config)
        #: the typed configuration (topics, contact frames, core objects, settings)
        self.config = typed
        s = self.settings = typed.settings
        self.names = list(s.names)
        self.n = len(self.names)
        self.guard = InputGuard(s.input)
        self.limit = LimitStage(s.limits, self.n)
        self.internal = InternalLoadStage(s.prescription, s.feedback, s.output.object_axes)
        self.friction = FrictionStage(s.friction)
        self.weight = ObjectWeight(s.weight)  # hold_object_weight (engine/holding.py)
        self.cache = DistributorCache(self.names, typed.contact_types, typed.object_model,
                                      typed.options, typed.contact_pose_tolerance,
                                      contact_extras=self.friction.extras)
        self.output = OutputStage(s.output)
        self._w = np.zeros(6)
        self._saturated = False

    # -- the parts' state, by name (tests, tools) ------------------------------------------
    cfg = property(lambda self: self.config.params, doc='The validated parameters (dict).')
    limits = property(lambda self: self.limit.limits, doc='The command limits in force.')
    feedback = property(lambda self: self.internal.feedback, doc='The internal-load feedback.')
    lam = property(lambda self: self.internal.lam, doc='The prescription resolved, or None.')
    lam_error = property(lambda self: self.internal.error, doc='Why it was rejected, or None.')
    timed_out = property(lambda self: self.guard.timed_out, doc='Whether the input timed out.')
    applied_correction = property(lambda self: self.internal.applied_correction,
                                  doc='The feedback correction last applied, or None.')
    object_axes = property(lambda self: self.settings.output.object_axes,
                           doc='Whether commands are in object axes.')

    # -- inputs other than the desired wrench -------------------------------------------------
    def offer_contacts(self, positions, quaternions, mono_ns: int) -> ContactUpdate:
        """Take contact poses (the contact input's latest), rebuilding the solver if they moved.

        :param positions: (n, 3) in the object frame.
        :param quaternions: (n, 4) ``[qx, qy, qz, qw]``.
        :param mono_ns: steady time.
        :return: whether a solver was built, its basis, and any refusal (poses rejected,
            or the prescription rejected on the new solver).
        """
        try:
            if not self.cache.update(positions, quaternions):
                return ContactUpdate()
        except ValueError as e:
            return ContactUpdate(refusal=Refusal('rejected_contacts',
                                                 f'contact poses rejected: {e}', ERROR,
                                                 'contacts'))
        why = self.rebuilt(mono_ns)
        return ContactUpdate(True, self.basis_names, None if why is None else Refusal(
            'rejected_internal_load', why, ERROR, 'internal load'))

    def rebuilt(self, mono_ns: int) -> Optional[str]:
        """Adopt the solver the cache has just built (the contacts changed).

        :param mono_ns: steady time.
        :return: None, or why the prescription is rejected on the new solver.
        """
        dist = self.cache.distributor
        self.feedback.set_basis(dist.basis_names, mono_ns)
        self.friction.feedback.contacts_changed(mono_ns)
        return self.internal.rebuilt(dist, self.limits)

    @property
    def has_solver(self) -> bool:
        """Tell whether contact poses were accepted (a solver is built)."""
        return self.cache.distributor is not None

    @property
    def basis_names(self) -> list:
        """Return the internal-load basis of the current solver (empty before the first)."""
        dist = self.cache.distributor
        return [] if dist is None else list(dist.basis_names)

    def set_prescription(self, prescription, source: str) -> None:
        """Prescribe an internal load (a problem file's); resolved on the next solver.

        :param prescription: the ``InternalLoadPrescription``.
        :param source: where it came from (diagnostics).
        """
        self.internal.adopt(prescription, source, None, None)

    def offer_orientation(self, quaternion) -> None:
        """Take the object's orientation in ``gravity_frame`` (``hold_object_weight``).

        :param quaternion: ``[qx, qy, qz, qw]``.
        """
        self.weight.offer_orientation(quaternion)

    def offer_internal_load(self, names: Optional[Sequence[str]],
                            values: np.ndarray) -> Optional[Refusal]:
        """Take a prescription from the ``internal_load`` topic.

        :param names: the message's labels (handles or the basis), or None (coordinates).
        :param values: the values.
        :return: None when adopted, else why it was rejected (the previous one stays).
        """
        why = self.internal.offer(names, np.asarray(values, float), self.cache.distributor,
                                  self.limits)
        return None if why is None else Refusal('rejected_internal_load', why, ERROR,
                                                'internal load')

    def reference(self) -> Optional[np.ndarray]:
        """Return the internal load commanded before the feedback correction."""
        return self.internal.reference(self.cache.distributor, self.friction.added)

    def commanded(self) -> Optional[np.ndarray]:
        """Return the internal load last commanded: reference plus applied correction."""
        return self.internal.commanded(self.reference())

    def offer_measurement(self, names: Optional[Sequence[str]], values: np.ndarray,
                          mono_ns: int, clock_ns: int = 0) -> Optional[Refusal]:
        """Take a measured internal load (the analyzer's read-out) for the feedback.

        :param names: the layout's labels (must be the basis names), or None.
        :param values: the coordinates.
        :param mono_ns: steady receive time (staleness).
        :param clock_ns: node clock (the PI's time; 0: unknown, steady time used).
        :return: None, or why it was refused (counted by the feedback; reported while on).
        """
        dist = self.cache.distributor
        if dist is None:
            why = 'no contacts yet: measurement ignored'
        else:
            why = self.feedback.measure(names, np.asarray(values, float), self.reference(),
                                        mono_ns, self._saturated, clock_ns)
            if why is None:  # the product E u here, off the desired wrench's path
                self.internal.now(dist, mono_ns, self.limits.internal_load)
                return None
        return Refusal('feedback_rejected', f'internal-load feedback: {why}', WARN, 'feedback',
                       report=self.feedback.enabled)

    def offer_friction(self, labels, values: np.ndarray, mono_ns: int,
                       clock_ns: int = 0) -> Optional[Refusal]:
        """Take the analyzer's friction message for the friction feedback.

        :return: None, or why it was refused (reported while the loop is on).
        """
        why = self.friction.offer_measurement(labels, values, mono_ns, clock_ns)
        return None if why is None else Refusal(
            'friction_feedback_rejected', f'friction feedback: {why}', WARN, 'friction',
            report=self.friction.feedback.enabled)

    # -- the per-message path -----------------------------------------------------------
    def step(self, stamp_ns: int, wrench: Sequence[float], now_ns: int, mono_ns: int,
             frame_id: str = '', contacts_problem: Optional[str] = None,
             markers_read: bool = True) -> Outcome:
        """Commands for one desired wrench, or the reason for none, and what goes with them.

        :param stamp_ns: the input's stamp.
        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame about the CoM.
        :param now_ns: node clock (0: unknown, no future check).
        :param mono_ns: steady clock (the watchdog's and the markers').
        :param frame_id: the input's frame id ('' : not checked).
        :param contacts_problem: why the contacts are not usable now, or None.
        :param markers_read: whether the markers have a reader (False: none are made, their
            period starts at the first one read).
        :return: the outcome: commands, drop, auto mode's load, markers when due.
        """
        w = self._w
        w[:] = wrench
        refused = self.guard.refusal(wrench, stamp_ns, now_ns, frame_id)
        if refused is not None:
            return refused
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
        if outcome.commands is not None:
            self.output.attach(self, outcome, wrench, mono_ns, markers_read)
        if outcome.valid:
            self.guard.valid(mono_ns, now_ns)
        return outcome

    def _commands(self, w: np.ndarray, mono_ns: int) -> Outcome:
        """Commands for a checked desired wrench, inside every limit (module docstring)."""
        lim = self.limits
        dist = self.cache.distributor
        over = lim.check_desired(w)
        if over is not None and lim.policy != 'scale':
            return self.limit.hit(over.text, None, 1.0, self.timed_out)
        internal, corr = self.internal.now(dist, mono_ns, lim.internal_load)
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
        friction = self.friction
        if friction.active and friction.options.mode == 'auto':
            out = friction.apply(dist, out, self.object_axes, mono_ns, lim)
            if out is None:
                return self._friction_fallback()
        if not np.isfinite(out).all():
            return Outcome(None, 'solver_nan', 'solver returned NaN or Inf; no command',
                           'solver', 'rejected_nan')
        v = lim.check_commands(out)
        self._saturated = over is not None
        if v is not None and corr is not None:
            delta = dist.internal_wrench(corr, self.object_axes).reshape(self.n, 6) * scale
            out, kept = self.limit.back_off(out, delta)
            self._saturated = True
            corr = corr * kept
            self.feedback.backed_off(corr)
            v = lim.check_commands(out)
        self.internal.applied_correction = corr
        if v is not None and lim.policy != 'scale':
            return self.limit.hit(v.text, None, 1.0, self.timed_out)
        if v is not None:
            self._saturated = True
            out = out * v.scale
            scale *= v.scale
            if friction.added is not None:  # report auto mode's load as sent
                friction.added = friction.added * v.scale
        return self._finish(out, over, v, scale)

    def _finish(self, out: np.ndarray, over, v, scale: float) -> Outcome:
        """Friction check on the commands as sent, the sign, and the limit report."""
        if self.friction.active:
            self.friction.check_sent(self.cache.distributor, out, self.object_axes)
        if self.settings.output.negate:
            out = -out
        if over is None and v is None:
            self.limit.sent(out)
            return Outcome(out)
        text = '; '.join(x.text for x in (over, v) if x is not None)
        return self.limit.hit(text, out, scale, self.timed_out)

    def _friction_fallback(self) -> Outcome:
        """Auto mode found no internal load: the configured fallback (not a valid input)."""
        why = f'friction: {self.friction.infeasible}'
        out = self.friction.fallback()
        if out is not None and self.settings.output.negate:
            out = -out
        if self.timed_out or (out is not None and not self.limits.within(out)):
            out = None
        return Outcome(out, 'friction', why, 'friction', 'friction_infeasible')

    # -- watchdog ------------------------------------------------------------------------
    def watchdog(self, mono_ns: int, now_ns: int) -> Optional[str]:
        """Check the input timeout (:meth:`.watchdog.InputGuard.watchdog`)."""
        return self.guard.watchdog(mono_ns, now_ns)

    def tick(self, mono_ns: int, now_ns: int) -> Outcome:
        """One watchdog check as the node acts on it (:meth:`.watchdog.InputGuard.tick`)."""
        return self.guard.tick(mono_ns, now_ns, self.n)

    # -- runtime parameters (:mod:`.distribution_params`) ----------------------------------------
    def plan(self, new: dict, touched: set, prescription_changed: bool) -> dict:
        """Check a parameter change without applying it (:func:`.distribution_params.plan`)."""
        return distribution_params.plan(self, new, touched, prescription_changed)

    def adopt(self, plan: dict, mono_ns: int) -> None:
        """Apply a checked parameter change (:func:`.distribution_params.adopt`)."""
        distribution_params.adopt(self, plan, mono_ns)

    # -- diagnostics ---------------------------------------------------------------------------
    def report(self, mono_ns: int) -> tuple:
        """Key/values of the summary status and per concern (:mod:`.distribution_report`)."""
        return reporting.values(self, mono_ns)

    def conditions(self, mono_ns: int) -> dict:
        """Return the engine's persistent conditions per concern (the node adds its own)."""
        return reporting.conditions(self, mono_ns)

    def diagnostics(self, mono_ns: int) -> Report:
        """Everything the diagnostics show of the engine, in one call (the node's timer).

        :param mono_ns: steady time.
        :return: values, per-concern values, conditions and the feedback loops' counters.
        """
        values, per = self.report(mono_ns)
        return Report(values, per, self.conditions(mono_ns),
                      {**self.feedback.counters, **self.friction.feedback.counters})

    def safety_conditions(self) -> list:
        """Return the WARNs of the limits status: the opt-in in force, package default limits."""
        return safety_conditions(self.settings.opt_in, self.settings.defaults_in_force)
