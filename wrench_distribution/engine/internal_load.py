"""The distribution engine's internal load: prescription plus feedback correction (no ROS).

The prescription (:mod:`.prescription`: parameters, the ``internal_load`` topic or a problem
file) is resolved on each new solver and checked against the limits; its stacked wrench
``E lambda`` is computed once per solver (the fast path). The feedback (:mod:`.feedback`)
adds a correction ``u`` in the same basis; ``E u`` is computed when a measurement changes
it, off the desired wrench's path, and never beyond ``internal_load_limit``.
"""
from typing import Optional, Sequence

import numpy as np

from wrench_distribution.config.settings import GainSettings
from wrench_distribution.core.codec import zero_below_resolution
from wrench_distribution.core.limits import CommandLimits
from wrench_distribution.core.prescription import InternalLoadPrescription
from .feedback import bounded, FeedbackGains, InternalLoadFeedback
from .outcome import Refusal
from .status import WARN


def gains_from(settings: GainSettings) -> FeedbackGains:
    """Return the internal-load feedback's gains.

    :param settings: the feedback settings.
    :return: the gains.
    """
    return FeedbackGains(list(settings.kp), list(settings.ki), settings.integral_limit,
                         settings.correction_limit, settings.timeout_ns,
                         on_sensor_fault=settings.on_sensor_fault)


class InternalLoadStage:
    """The internal load commanded: what was prescribed, where from, and the correction.

    :param prescription: the parameters' prescription.
    :param feedback: the feedback's settings.
    :param object_axes: commands in object axes.
    """

    def __init__(self, prescription: InternalLoadPrescription, feedback: GainSettings,
                 object_axes: bool) -> None:
        self.prescription = prescription
        self.source = 'parameter' if self.prescription.kind != 'none' else 'none'
        self.feedback = InternalLoadFeedback(gains_from(feedback), feedback.enabled)
        self.object_axes = object_axes
        self.lam: Optional[np.ndarray] = None
        self.error: Optional[str] = None
        self.applied_correction: Optional[np.ndarray] = None
        self.stacked: Optional[np.ndarray] = None  # E lambda of the prescription
        self._corr_key: tuple = (None, None, None, None)  # what the cached correction was made of
        self._corr_cached: tuple = (None, None)
        self._basis_since: Optional[int] = None  # steady time of a basis the feedback has not followed yet

    def problem(self, dist, lam: Optional[np.ndarray], limits: CommandLimits) -> Optional[str]:
        """Why resolved coordinates cannot be used (a limit, or commands over a limit).

        :param dist: the solver.
        :param lam: the coordinates, or None.
        :param limits: the limits to check against.
        :return: the reason, or None.
        """
        if lam is None:
            return None
        why = limits.check_internal_load(lam)
        if why is not None:
            return why
        alone = dist.internal_wrench(lam, self.object_axes).reshape(-1, 6)
        v = limits.check_commands(alone)
        return None if v is None else f'internal load alone exceeds the command limits: {v.text}'

    def resolve(self, prescription: InternalLoadPrescription, dist,
                limits: CommandLimits) -> Optional[np.ndarray]:
        """Resolve a prescription on a solver at its weights and check it against the limits.

        :return: the coordinates applied at the solver's weights (eq. 16.7), or None for no
            internal load.
        :raises ValueError: with the reason when it does not fit or is over a limit.
        """
        lam = dist.applied(prescription)
        why = self.problem(dist, lam, limits)
        if why is not None:
            raise ValueError(why)
        return lam

    def rebuilt(self, dist, limits: CommandLimits) -> Optional[str]:
        """Resolve the prescription on a new solver.

        :return: None, or why the prescription is rejected on it.
        """
        try:
            self.lam = self.resolve(self.prescription, dist, limits)
            self.error = None
        except ValueError as e:
            self.lam = None
            self.error = f'internal load prescription rejected: {e}'
        self.refresh(dist)
        return self.error

    def adopt(self, prescription: InternalLoadPrescription, source: Optional[str], dist,
              lam: Optional[np.ndarray]) -> None:
        """Use a checked prescription (and its coordinates on ``dist``, when there is one).

        :param source: where it came from (None: kept).
        """
        self.prescription = prescription
        if source is not None:
            self.source = source
        if dist is not None:
            self.lam, self.error = lam, None
        self.refresh(dist)
        self.follow(dist)  # the feedback may be switched on with this change

    def refresh(self, dist) -> None:
        """Precompute the prescribed internal load's stacked wrench (the fast path)."""
        self.stacked = None
        if dist is not None and self.error is None and self.lam is not None:
            self.stacked = dist.internal_wrench(self.lam, self.object_axes)

    def contacts_changed(self, dist, mono_ns: int) -> None:
        """Have the feedback follow a new solver's basis: at once when in use, else when it is read.

        In use: the loop on (or releasing its correction), or a prescription (which builds the
        basis anyway). The named basis of a new geometry is a third of a moving distributor's
        tick; with no prescription, the loop off and no measurement coming, nothing reads it.

        :param dist: the new solver.
        :param mono_ns: steady time of the change.
        """
        self._basis_since = mono_ns
        if self.feedback.active or self.prescription.kind != 'none':
            self.follow(dist)

    def follow(self, dist) -> None:
        """Give the feedback the solver's basis, if the contacts changed since it last had it.

        :param dist: the solver, or None.
        """
        if self._basis_since is not None and dist is not None:
            self.feedback.set_basis(dist.basis_names, self._basis_since)
            self._basis_since = None

    @property
    def followed_basis(self) -> Optional[list]:
        """Return the basis names the feedback has followed, or None when a newer basis is not built yet."""
        return None if self._basis_since is not None else list(self.feedback.names)

    def offer(self, names: Optional[Sequence[str]], values: np.ndarray, dist,
              limits: CommandLimits) -> Optional[str]:
        """Take a prescription from the ``internal_load`` topic.

        :param names: the message's labels (handles or the basis), or None (coordinates).
        :param values: the values.
        :param dist: the solver, or None.
        :param limits: the limits in force.
        :return: None when adopted, else why it was rejected (the previous one stays).
        """
        if not np.all(np.isfinite(values)):
            return 'internal_load message contains NaN or Inf'
        if names is not None and (dist is None or names != list(dist.basis_names)):
            if len(names) != values.size:
                return f'internal_load message has {values.size} values but {len(names)} labels'
            candidate = InternalLoadPrescription.of_handles(dict(zip(names, values.tolist())))
        else:
            candidate = InternalLoadPrescription.of_coordinates(values)
        why = limits.check_internal_load(values)
        if why is not None:
            return f'internal_load message rejected: {why}'
        lam = None
        if dist is not None:
            try:
                lam = self.resolve(candidate, dist, limits)
            except ValueError as e:
                return f'internal_load message rejected: {e}'
        self.adopt(candidate, 'topic', dist, lam)
        return None

    def apply_correction(self, correction: Optional[np.ndarray]) -> None:
        """Record the feedback correction applied with the last commands (None: none).

        :param correction: the correction as applied (cut back by a limit, or not).
        """
        self.applied_correction = correction

    def total(self, correction: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """Return the applied coordinates commanded: the prescription plus a correction (None: none)."""
        parts = [x for x in (self.lam, correction) if x is not None]
        return None if not parts else parts[0] if len(parts) == 1 else parts[0] + parts[1]

    def reference(self, dist, added: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """Return the internal load commanded before the feedback correction.

        :param dist: the solver (None: no reference).
        :param added: auto mode's added load, or None.
        :return: prescription plus the added load (coordinates), or None.
        """
        if dist is None:
            return None
        lam = np.zeros(len(dist.basis_names)) if self.lam is None else self.lam
        return lam if added is None or added.shape != lam.shape else lam + added

    def commanded(self, reference: Optional[np.ndarray]) -> Optional[np.ndarray]:
        """Return the internal load last commanded: reference plus applied correction."""
        corr = self.applied_correction
        return reference if reference is None or corr is None or corr.shape != reference.shape \
            else reference + corr

    def now(self, dist, mono_ns: int, bound: float) -> tuple:
        """Stacked internal wrench (prescription + feedback correction) and the correction.

        :param dist: the solver.
        :param mono_ns: steady time (the feedback's staleness).
        :param bound: ``internal_load_limit`` (the corrected load stays inside it).
        :return: ``(stacked wrench or None, correction or None)``.
        """
        internal = self.stacked
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
        corr = bounded(lam + corr, -bound, bound) - lam  # never beyond internal_load_limit
        corr = dist.element_scales * corr  # a correction on a leaving contact ramps with it (16.7)
        extra = dist.internal_basis(self.object_axes) @ corr
        self._corr_key = (feedback.correction, self.lam, internal, dist)
        self._corr_cached = (extra if internal is None else internal + extra), corr
        return self._corr_cached

    def measure(self, dist, names: Optional[Sequence[str]], values, reference: Optional[np.ndarray],
                mono_ns: int, saturated: bool, clock_ns: int, bound: float, health=None,
                stamp_ns: Optional[int] = None):
        """Take a measured internal load (the analyzer's read-out) for the feedback.

        :param dist: the solver, or None.
        :param names: the layout's labels (must be the basis names), or None.
        :param values: the coordinates.
        :param reference: the internal load commanded before the correction.
        :param mono_ns: steady receive time (staleness).
        :param saturated: whether a limit cut the last commands back (anti-windup).
        :param clock_ns: node clock (the PI's time; 0: unknown, steady time used).
        :param bound: ``internal_load_limit``.
        :param health: the read-out's health label (:mod:`~wrench_distribution.core.doubt`;
            None: none): sensors in doubt suspend the loop (``on_sensor_fault``).
        :param stamp_ns: the read-out's sample stamp when known, else None (a doubt's onset
            is then dated on the arrivals).
        :return: None, or the :class:`~.outcome.Refusal` (counted by the feedback; reported while on).
        """
        feedback = self.feedback
        if dist is None:
            why = 'no contacts yet: measurement ignored'
        else:
            self.follow(dist)
            why = feedback.measure(names, np.asarray(values, float), reference, mono_ns, saturated, clock_ns,
                                   health, stamp_ns)
            if why is None:  # the product E u here, off the desired wrench's path
                self.now(dist, mono_ns, bound)
                return None
        return Refusal('feedback_rejected', f'internal-load feedback: {why}', WARN, 'feedback',
                       report=feedback.enabled)

    def feedback_conditions(self, mono_ns: int) -> list:
        """Return a WARN while the feedback is on and not closed (its staleness checked at ``mono_ns``)."""
        feedback = self.feedback
        feedback.current(mono_ns)
        if feedback.enabled and feedback.status() != 'closed loop':
            return [(WARN, f'internal-load feedback {feedback.status()}')]
        return []

    def feedback_values(self, commanded: Optional[np.ndarray], dist) -> dict:
        """Commanded, measured and correction per element of the solver's basis, and the loop's state.

        :param commanded: the internal load last commanded, or None.
        :param dist: the solver, or None (its basis followed first, :meth:`follow`).
        :return: the values.
        """
        self.follow(dist)
        fb = self.feedback
        out = {'state': fb.status()}
        shown = [None if a is None else zero_below_resolution([float(x) for x in a])
                 for a in (commanded, fb.measured, self.applied_correction)]
        commanded, measured, applied = shown
        for j, name in enumerate(fb.names):
            def fig(array, j=j):
                return '-' if array is None or len(array) <= j else f'{array[j]:.6g}'
            out[f'{name}'] = (f'commanded {fig(commanded)}, measured {fig(measured)}, '
                              f'correction {fig(applied)}')
        return out
