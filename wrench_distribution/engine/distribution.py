"""The distribution engine: desired object wrench -> one wrench command per effector (no ROS).

One object owns what the distributor does with a desired wrench, composed of one part per
responsibility: the input checks and watchdog (:mod:`.watchdog`), the solver cache
(:mod:`.cache`), the internal load, prescribed and fed back (:mod:`.internal_load`),
friction (:mod:`.friction`), the object's weight (:mod:`.holding`), the command limits
(:mod:`.limit_stage`, policy ``on_limit``) and the outputs (:mod:`.outcome`). It reads the
typed :class:`~wrench_distribution.config.DistributorConfig`. The distributor node converts
messages and calls :meth:`DistributionEngine.step`, whose :class:`~.outcome.Outcome` holds
everything it publishes for that message; a runtime change is :meth:`plan` then
:meth:`adopt`; the diagnostics are :meth:`report`.

Per desired wrench, in order: NaN or Inf (``nan``), another frame (``frame``), a stamp too
far ahead of the clock (``future``), no contacts (``no_contacts``), a rejected prescription
(``internal_load``), no object orientation for ``hold_object_weight`` (``no_contacts``);
the object's weight added (:mod:`.holding`); then the commands (:mod:`.commands`):
desired-wrench limit, solver, friction auto mode, command limits (the feedback correction is
cut back first), the friction check on the commands as sent (scaled or not), the sign. Only
a desired wrench whose commands were sent unchanged by any limit is a *valid input*: it
alone resets the watchdog.
"""
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.config import Change, DistributorConfig
from wrench_distribution.core.prescription import InternalLoadPrescription
from .cache import DistributorCache
from .commands import CommandPath
from .feedback import FeedbackGains
from .friction import FrictionStage
from .holding import ObjectWeight, stop_commands, stop_outcome
from .internal_load import gains_from, InternalLoadStage
from .limit_stage import LimitStage, safety_conditions
from .outcome import ContactUpdate, FrictionLoad, Outcome, OutputStage, Refusal, Report
from .status import ERROR, WARN
from .watchdog import InputGuard
from .weights import ContactWeights, loads_to_carry

#: The distributor's diagnostic concerns, one status each, in order.
CONCERNS = ('input', 'contacts', 'internal load', 'solver', 'limits', 'clock', 'friction',
            'feedback', 'outputs')
__all__ = ['CONCERNS', 'DistributionEngine', 'DistributionPlan', 'Outcome']


@dataclass(frozen=True)
class DistributionPlan:
    """A runtime change checked against the engine, ready to adopt (:meth:`DistributionEngine.plan`).

    :param change: the configuration's change.
    :param prescription: the prescription in force after it.
    :param lam: its coordinates on the solver, or None.
    :param gains: the feedback's gains.
    :param distributor: the solver after it (a new one for a new ``torque_share``), or None.
    :param weights: the checked targets of a new ``contact_weights``, or None.
    """

    change: Change
    prescription: InternalLoadPrescription
    lam: Optional[np.ndarray]
    gains: FeedbackGains
    distributor: object
    weights: Optional[np.ndarray] = None


class DistributionEngine:
    """Desired wrench -> commands, with prescription, feedback, friction, limits, watchdog.

    :param config: the distributor's configuration.
    :raises ConfigError: when the core objects cannot be built (message names the cause).
    """

    def __init__(self, config: DistributorConfig) -> None:
        self.config = config
        s = config.settings
        self.names = list(config.effectors)
        self.n = len(self.names)
        self.guard = InputGuard(s.input)
        self.limit = LimitStage(s.limits, self.n)
        self.internal = InternalLoadStage(s.prescription, s.feedback, s.output.object_axes)
        self.friction = FrictionStage(s.friction)
        self.weight = ObjectWeight(s.weight)
        self.cache = DistributorCache(self.names, config.contact_types, config.object_model,
                                      config.options, config.contact_pose_tolerance,
                                      contact_extras=self.friction.extras)
        self.weights = ContactWeights(s.contact_weights, self.cache)
        self.output = OutputStage(s.output)
        self.path = CommandPath(self.limit, self.internal, self.friction, s.output.object_axes,
                                s.output.negate)
        self._wrench = np.zeros(6)
        self._carried: Optional[np.ndarray] = None  # the last wrench the effectors applied
        self.saturated = False  # the last commands were cut back by a limit (the PI's anti-windup)

    @property
    def settings(self):
        """Return the distribution settings in force (``config.settings``)."""
        return self.config.settings

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
            if not self.cache.update(positions, quaternions, weights=self.weights.actual):
                return ContactUpdate()
        except ValueError as e:
            return ContactUpdate(refusal=Refusal('rejected_contacts',
                                                 f'contact poses rejected: {e}', ERROR,
                                                 'contacts'))
        why = self._rebuilt(mono_ns, True)
        return ContactUpdate(True, self.internal.followed_basis, None if why is None else Refusal(
            'rejected_internal_load', why, ERROR, 'internal load'))

    def _rebuilt(self, mono_ns: int, geometry: bool) -> Optional[str]:
        """Resolve the prescription on a new solver (why not, or None); a new geometry resets the loops."""
        dist = self.cache.distributor
        if geometry:
            self.internal.contacts_changed(dist, mono_ns)
            self.friction.feedback.contacts_changed(mono_ns)
        return self.internal.rebuilt(dist, self.settings.limits)

    @property
    def has_solver(self) -> bool:
        """Tell whether contact poses were accepted (a solver is built)."""
        return self.cache.distributor is not None

    @property
    def basis_names(self) -> list:
        """Return the internal-load basis of the current solver (empty before the first)."""
        dist = self.cache.distributor
        return [] if dist is None else list(dist.basis_names)

    def set_prescription(self, prescription: InternalLoadPrescription, source: str) -> None:
        """Prescribe an internal load (a problem file's; ``source`` for the diagnostics), resolved per solver."""
        self.internal.adopt(prescription, source, None, None)

    def offer_orientation(self, quaternion) -> None:
        """Take the object's orientation ``[qx, qy, qz, qw]`` in ``gravity_frame`` (holding its weight)."""
        self.weight.offer_orientation(quaternion)

    def offer_weights(self, labels: Optional[Sequence[str]], values) -> Optional[Refusal]:
        """Take targets from the ``contact_weights`` topic (:meth:`.weights.ContactWeights.offer`)."""
        return self.weights.offer(labels, values, *loads_to_carry(self._carried, self.weight, self.settings.friction))

    @property
    def contact_weights(self) -> np.ndarray:
        """Return the actual contact weights (n,)."""
        return self.weights.actual

    def offer_internal_load(self, names: Optional[Sequence[str]],
                            values: np.ndarray) -> Optional[Refusal]:
        """Take a prescription from the ``internal_load`` topic.

        :param names: the message's labels (handles or the basis), or None (coordinates).
        :param values: the values.
        :return: None when adopted, else why it was rejected (the previous one stays).
        """
        why = self.internal.offer(names, np.asarray(values, float), self.cache.distributor,
                                  self.settings.limits)
        return None if why is None else Refusal('rejected_internal_load', why, ERROR,
                                                'internal load')

    def reference(self) -> Optional[np.ndarray]:
        """Return the internal load commanded before the feedback correction."""
        return self.internal.reference(self.cache.distributor, self.friction.added)

    def commanded(self) -> Optional[np.ndarray]:
        """Return the internal load last commanded: reference plus applied correction."""
        return self.internal.commanded(self.reference())

    def offer_measurement(self, names: Optional[Sequence[str]], values: np.ndarray, mono_ns: int, clock_ns: int = 0,
                          health: Optional[str] = None, stamp_ns: Optional[int] = None) -> Optional[Refusal]:
        """Take a measured internal load (the analyzer's read-out) for the feedback.

        :param names: the layout's labels (must be the basis names), or None.
        :param values: the coordinates.
        :param mono_ns: steady receive time (staleness).
        :param clock_ns: node clock (the PI's time; 0: unknown, steady time used).
        :param health: the read-out's health label (:mod:`~wrench_distribution.core.doubt`;
            None: none): sensors in doubt suspend the loop (``on_sensor_fault``).
        :param stamp_ns: the read-out's sample stamp (an analyzer in this process), or None.
        :return: None, or why it was refused (counted by the feedback; reported while on).
        """
        return self.internal.measure(self.cache.distributor, names, values, self.reference(), mono_ns, self.saturated,
                                     clock_ns, self.settings.limits.internal_load, health, stamp_ns)

    def offer_friction(self, labels, values: np.ndarray, mono_ns: int,
                       clock_ns: int = 0) -> Optional[Refusal]:
        """Take the analyzer's friction message for the friction feedback.

        :return: None, or why it was refused (reported while the loop is on).
        """
        why = self.friction.offer_measurement(labels, values, mono_ns, clock_ns)
        return None if why is None else Refusal('friction_feedback_rejected', f'friction feedback: {why}', WARN,
                                                'friction', report=self.friction.feedback.enabled)

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
        w = self._wrench
        w[:] = wrench
        refused = self.guard.refusal(wrench, stamp_ns, now_ns, frame_id)
        if refused is not None:
            return refused
        if contacts_problem is not None or self.cache.distributor is None:
            return Outcome(None, 'no_contacts', f'no command: {contacts_problem or "no contacts"}',
                           'contacts', 'no_contacts')
        if self.internal.error is not None:
            return Outcome(None, 'internal_load', self.internal.error, 'internal load',
                           'rejected_internal_load')
        if self.weight.problem() is not None:
            return Outcome(None, 'no_contacts', self.weight.problem(), 'contacts', 'no_contacts')
        self.weight.add_to(w)  # the limits and the solver see what the effectors must apply
        moved = self._ramp(stamp_ns, mono_ns)
        if moved is not None:
            return moved
        self._carried = w.copy()
        outcome, self.saturated = self.path.commands(self.cache.distributor, w, mono_ns,
                                                     self.guard.timed_out, self.cache.corners)
        self.weights.pause(outcome.message if outcome.cause == 'friction' else None)
        if outcome.commands is not None:
            added = self.friction.added if self.friction.options.mode == 'auto' else None
            load = None if added is None else FrictionLoad(self.basis_names, added.tolist())
            outcome = self.output.attach(outcome, load, lambda: self.output.markers(
                self.cache, self.weight.held(wrench), self.commanded(), self.friction.colors()),
                mono_ns, markers_read)
        if outcome.valid:
            self.guard.valid(mono_ns, now_ns)
        return outcome

    def _ramp(self, stamp_ns: int, mono_ns: int) -> Optional[Outcome]:
        """Move the weights for this desired wrench (the solver with them); an outcome when that fails."""
        try:
            moved = self.weights.advance(stamp_ns)
        except ValueError as e:
            return Outcome(None, 'rejected', f'no command: contact weights {e}', 'solver', 'rejected')
        if moved is not None and self._rebuilt(mono_ns, moved) is not None:
            return Outcome(None, 'internal_load', self.internal.error, 'internal load',
                           'rejected_internal_load')
        return None

    # -- watchdog ------------------------------------------------------------------------
    def tick(self, mono_ns: int, now_ns: int) -> Outcome:
        """One watchdog check as the node acts on it (:meth:`.watchdog.InputGuard.tick`)."""
        return self.guard.tick(mono_ns, now_ns, self.stop_commands)

    def stop_commands(self) -> Optional[np.ndarray]:
        """Return what ``on_timeout`` publishes (:func:`.holding.stop_commands`)."""
        return stop_commands(self.settings.input.on_timeout, self.n, self.cache, self.weight,
                             self.internal.lam, self.friction, self.limit.limits, self.settings.output)

    # -- lifecycle ---------------------------------------------------------------------------
    def stop(self) -> Outcome:
        """Return what a stop publishes (deactivate, shutdown): :func:`.holding.stop_outcome`."""
        return stop_outcome(self.settings.input.on_timeout, self.n, self.stop_commands)

    def resume(self, mono_ns: int, now_ns: int) -> None:
        """Listen again after a pause (activate): the input timeout starts afresh, all else is kept.

        :param mono_ns: steady clock.
        :param now_ns: node clock.
        """
        self.guard.restart(mono_ns, now_ns)

    # -- runtime parameters --------------------------------------------------------------
    def plan(self, change: Change) -> DistributionPlan:
        """Check a runtime change against the solver, without applying it.

        :param change: the configuration's change (:func:`~wrench_distribution.config.changed_config`).
        :return: what :meth:`adopt` needs.
        :raises ValueError: when it does not fit the solver (the message names the parameter).
        """
        settings = change.config.settings
        prescription = settings.prescription if change.prescription_changed \
            else self.internal.prescription
        dist = self.cache.distributor
        if 'torque_share' in change.touched and dist is not None:
            dist = self.cache.try_options(change.config.options)
        lam = None if dist is None else self.internal.resolve(prescription, dist, settings.limits)
        gains = gains_from(settings.feedback)
        if dist is not None:
            gains.per_element(len(dist.basis_names))  # raises naming the parameter
        weights = self.weights.planned(change, *loads_to_carry(self._carried, self.weight, settings.friction))
        return DistributionPlan(change, prescription, lam, gains, dist, weights)

    def adopt(self, plan: DistributionPlan, mono_ns: int) -> None:
        """Apply a checked runtime change (bumpless for the feedback).

        :param plan: the result of :meth:`plan`.
        :param mono_ns: steady time.
        """
        change, dist = plan.change, plan.distributor
        settings = change.config.settings
        if 'torque_share' in change.touched:
            self.cache.adopt_options(change.config.options, dist)
            if dist is not None:
                self._rebuilt(mono_ns, True)
        self.limit.configure(settings.limits)
        source = (('parameter' if plan.prescription.kind != 'none' else 'none')
                  if change.prescription_changed else None)
        self.internal.adopt(plan.prescription, source, dist, plan.lam)
        self.internal.feedback.set_gains(plan.gains)
        self.internal.feedback.set_enabled(settings.feedback.enabled, mono_ns)
        self.friction.set_feedback(settings.friction, mono_ns)
        self.guard.configure(settings.input)
        self.output.configure(settings.output)
        self.weights.configure(settings.contact_weights)
        if plan.weights is not None:
            self.weights.adopt(plan.weights, 'parameter')
        self.config = change.config

    # -- diagnostics ---------------------------------------------------------------------------
    def report(self, mono_ns: int) -> Report:
        """Everything the diagnostics show of the engine, in one call (the node's timer).

        :param mono_ns: steady time (input age; the feedback's staleness is checked here too,
            so a missing measurement shows without any desired wrench).
        :return: values, per-concern values, conditions over :data:`CONCERNS` and the
            feedback loops' counters.
        """
        s, internal, friction = self.settings, self.internal, self.friction
        feedback = internal.feedback
        values = self.guard.values(mono_ns)
        values.update(internal_load_prescription=internal.prescription.describe(),
                      internal_load_source=internal.source, on_limit=s.limits.policy)
        for part in (self.cache.values(internal.lam), friction.values(mono_ns), self.weight.values(),
                     self.weights.values()):
            values.update(part)
        per = {'limits': self.limit.values(s.opt_in, s.defaults_in_force),
               'internal load': {'source': internal.source,
                                 'prescription': internal.prescription.describe()},
               'feedback': internal.feedback_values(self.commanded(), self.cache.distributor)}
        cond: dict = {c: [] for c in CONCERNS}
        cond['internal load'] += [(ERROR, internal.error)] if internal.error else []
        cond['input'] += self.guard.conditions()
        cond['contacts'] += self.weights.conditions()
        cond['limits'] += self.limit.conditions(s.opt_in, s.defaults_in_force)
        cond['friction'] += [c for c in (friction.condition() if friction.active else None,
                                         friction.feedback_condition(mono_ns)) if c is not None]
        cond['feedback'] += internal.feedback_conditions(mono_ns)
        return Report(values, per, cond, {**feedback.counters, **friction.feedback.counters,
                                          **self.weights.counters})

    def safety_conditions(self) -> list:
        """Return the WARNs of the limits status: the opt-in in force, package default limits."""
        return safety_conditions(self.settings.opt_in, self.settings.defaults_in_force)
