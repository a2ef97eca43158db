"""Friction for the distributor and analyzer engines: cone check, auto mode, state (no ROS).

A :class:`~wrench_distribution.core.friction.FrictionModel` is built once per
``LoadDistributor`` (per contact configuration) and reused; the distributor engine calls
:meth:`FrictionStage.apply` (auto mode's added load) before its limits and
:meth:`FrictionStage.check_sent` on the commands it publishes. With ``friction_feedback``,
auto mode's margin comes from :class:`~.friction_feedback.FrictionFeedback`.
"""
from typing import List, Optional, Tuple

import numpy as np

from wrench_distribution.config.settings import FrictionSettings
from wrench_distribution.core.friction import (
    FrictionCheck, FrictionInfeasibleError, FrictionModel, FrictionOptions,
)
from .friction_feedback import friction_gains, FrictionFeedback
from .status import ERROR, OK, WARN


def to_contact_frames(distributor, out: np.ndarray) -> np.ndarray:
    """Rotate (n, 6) commands from object axes into the contact frames.

    A command in object axes about the contact point is ``(R f, R t)`` of the same command
    in the contact frame, ``R`` the contact's orientation in the object frame.

    :param distributor: the solver (its contacts' rotations).
    :param out: (n, 6) commands in object axes.
    :return: (n, 6) commands in the contact frames.
    """
    rotations = np.array([c.rotation for c in distributor.contacts])
    blocks = out.reshape(-1, 2, 3)
    return np.einsum('nji,nkj->nki', rotations, blocks).reshape(-1, 6)


#: Bisection steps when a limit cuts the tightened margin's extra load back.
BACKOFF_STEPS = 30

#: Diagnostic level of each contact status.
LEVELS = {'ok': OK, 'unloaded': OK, 'unconstrained': OK, 'near_limit': WARN,
          'slipping': ERROR, 'pulling': ERROR}


class FrictionStage:
    """Friction for one node: configuration, the model per solver, and the last state.

    :param settings: the friction settings.
    :param mode: ``'off'``, ``'check'`` or ``'auto'`` (None: the settings' mode).
    """

    def __init__(self, settings: FrictionSettings, mode: Optional[str] = None) -> None:
        mode = mode or settings.mode
        self.names = list(settings.names)
        self.extras = [dict(x) for x in settings.contact_fields]
        self.options = FrictionOptions(mode, settings.margin)
        self.on_infeasible = settings.on_infeasible
        self._model: Optional[FrictionModel] = None
        self._for = None
        self.check: Optional[FrictionCheck] = None
        self.added: Optional[np.ndarray] = None
        self.infeasible: Optional[str] = None
        self.last_good: Optional[np.ndarray] = None
        #: False when the mode is off or no contact has a cone or is unilateral.
        cones = any(x['friction'] is not None for x in self.extras)
        self.active = mode != 'off' and (settings.point_contacts or cones)
        #: the friction feedback (the analyzer's configuration has none: never enabled)
        self.feedback = FrictionFeedback(friction_gains(settings.feedback), settings.margin,
                                         self.names, settings.feedback.enabled)
        #: True when a command limit cut the tightened margin's load back (anti-windup)
        self.saturated = False

    def model(self, distributor) -> FrictionModel:
        """Return the friction model of a solver (built on first use).

        :param distributor: the current ``LoadDistributor``.
        :return: its model.
        """
        if self._for is not distributor:
            self._model = FrictionModel(distributor, self.options)
            self._for = distributor
        return self._model

    def apply(self, distributor, out: np.ndarray, object_frame: bool, now_ns: int = 0,
              limits=None) -> Optional[np.ndarray]:
        """Auto mode: add the internal load that keeps every contact inside its cone.

        The contact-frame commands are ``out`` itself, rotated when it is in object axes
        (never rebuilt from the prescription: what is checked is what is sent). The margin
        is the friction feedback's effective one (``friction_margin`` while it is off).

        :param distributor: the solver that made ``out``.
        :param out: (n, 6) commands in the node's command frame (before any sign flip).
        :param object_frame: whether ``out`` is in object axes.
        :param now_ns: steady time (the feedback's staleness and release ramp).
        :param limits: the command limits (``CommandLimits``): the load the tightened
            margin adds beyond ``friction_margin``'s is cut back to stay inside them.
        :return: the corrected commands, or None when no internal load keeps the contacts
            inside their cones (``infeasible`` says why).
        """
        model = self.model(distributor)
        contact = to_contact_frames(distributor, out) if object_frame else out
        self.infeasible = None
        self.added = None
        if self.options.mode != 'auto':
            return out
        margin = self.feedback.effective_margin(now_ns)
        self.saturated = False
        try:
            added = self._required(model, contact, margin)
        except FrictionInfeasibleError as error:
            self.infeasible = str(error)
            self.check = model.check(contact)
            return None
        if model.m and margin > self.options.margin and limits is not None:
            added = self._within_limits(distributor, model, contact, out, added, object_frame,
                                        limits)
        self.added = added
        if model.m:
            out = out + distributor.internal_wrench(added, object_frame).reshape(-1, 6)
        return out

    def _required(self, model: FrictionModel, contact: np.ndarray, margin: float) -> np.ndarray:
        """Auto mode's load at ``margin``; at ``friction_margin`` when the tighter cones fail."""
        try:
            return model.required_load(contact, margin)
        except FrictionInfeasibleError:
            if margin <= self.options.margin:
                raise
            self.saturated = True  # the tighter cones cannot be met: do not tighten further
            return model.required_load(contact, self.options.margin)

    def _within_limits(self, distributor, model: FrictionModel, contact: np.ndarray,
                       out: np.ndarray, added: np.ndarray, object_frame: bool,
                       limits) -> np.ndarray:
        """Cut the feedback's extra load back until the commands are inside the limits.

        Both loads keep every cone at ``friction_margin`` and the limits are convex, so the
        shares ``a`` of the extra load ``added - nominal`` that fit are an interval [0, a*]
        (empty only when the nominal load is over a limit: the engine's limits then act).

        :return: the load to add.
        """
        def commands(load):
            return out + distributor.internal_wrench(load, object_frame).reshape(-1, 6)
        if limits.check_commands(commands(added)) is None:
            return added
        self.saturated = True
        nominal = model.required_load(contact, self.options.margin)
        if limits.check_commands(commands(nominal)) is not None:
            return nominal
        low, high = 0.0, 1.0
        for _ in range(BACKOFF_STEPS):
            mid = 0.5 * (low + high)
            if limits.check_commands(commands(nominal + mid * (added - nominal))) is None:
                low = mid
            else:
                high = mid
        return nominal + low * (added - nominal)

    def offer_measurement(self, labels, values: np.ndarray, now_ns: int,
                          clock_ns: int = 0) -> Optional[str]:
        """Take the analyzer's friction message for the feedback.

        :param labels: the layout's dimension labels.
        :param values: the data.
        :param now_ns: steady receive time.
        :param clock_ns: node clock (0: unknown).
        :return: None, or why it was refused (counted by the feedback).
        """
        return self.feedback.measure(labels, np.asarray(values, float), now_ns,
                                     self.saturated, clock_ns)

    def set_feedback(self, settings: FrictionSettings, now_ns: int) -> None:
        """Adopt the feedback's parameters (runtime change; bumpless on and off).

        :param settings: the new friction settings.
        :param now_ns: steady time.
        """
        self.feedback.set_gains(friction_gains(settings.feedback))
        self.feedback.set_enabled(settings.feedback.enabled, now_ns)

    def feedback_condition(self, now_ns: int) -> Optional[Tuple[int, str]]:
        """Return a WARN while the feedback is on and suspended, else None.

        :param now_ns: steady time (a missing measurement shows without a desired wrench).
        """
        self.feedback.current(now_ns)
        status = self.feedback.status()
        if not self.feedback.enabled or status == 'closed loop':
            return None
        return WARN, f'friction feedback {status}'

    def scale_added(self, scale: float) -> None:
        """Scale auto mode's added load as the commands it went with were scaled (``on_limit: scale``).

        :param scale: the factor.
        """
        if self.added is not None:
            self.added = self.added * scale

    def check_contacts(self, distributor, contact: np.ndarray) -> FrictionCheck:
        """Check measured contact wrenches against the cones (the analyzer's check mode).

        :param distributor: the solver of these contacts.
        :param contact: (n, 6) wrenches in the contact frames.
        :return: the check (also the state the diagnostics show).
        """
        self.check = self.model(distributor).check(contact)
        return self.check

    def check_sent(self, distributor, out: np.ndarray, object_frame: bool) -> None:
        """Check the commands actually sent (after any scaling) against the cones.

        :param distributor: the solver that made ``out``.
        :param out: (n, 6) commands as published, before any sign flip.
        :param object_frame: whether ``out`` is in object axes.
        """
        contact = to_contact_frames(distributor, out) if object_frame else out
        self.check = self.model(distributor).check(contact)
        self.last_good = out

    def fallback(self) -> Optional[np.ndarray]:
        """Commands for an infeasible sample: the last good ones (hold) or zeros.

        :return: (n, 6) commands, or None when holding with nothing to hold.
        """
        if self.on_infeasible == 'zero':
            return np.zeros((len(self.names), 6))
        return self.last_good

    def condition(self) -> Optional[Tuple[int, str]]:
        """Return the diagnostic condition of the last sample: WARN near the limit, ERROR outside.

        :return: ``(level, message)`` or None when all is well or nothing was checked.
        """
        if self.infeasible is not None:
            return ERROR, f'friction: {self.infeasible}; ' + (
                'publishing zero wrenches' if self.on_infeasible == 'zero'
                else 'holding the last commands inside the cones')
        if self.check is None:
            return None
        bad = [(LEVELS[s], f'{n} {s}' + ('' if np.isnan(u) else f' ({u:.2f})'))
               for n, s, u in zip(self.names, self.check.status, self.check.utilisation)
               if LEVELS[s] > OK]
        if not bad:
            return None
        return max(level for level, _ in bad), 'friction: ' + ', '.join(text for _, text in bad)

    def values(self, now_ns: int = 0) -> dict:
        """Diagnostic key/values: utilisation, normal force and status per effector.

        In auto mode also the feedback's state, measured utilisation, target and margin.

        :param now_ns: steady time.
        :return: the key/values.
        """
        if self.check is None:
            return {}
        out = {'friction_mode': self.options.mode}
        if self.options.mode == 'auto':
            out.update(self.feedback.values(now_ns))
        for n, s, u, f in zip(self.names, self.check.status, self.check.utilisation,
                              self.check.normal_force):
            out[f'friction.{n}'] = f'{s}, utilisation {"-" if np.isnan(u) else f"{u:.3f}"}, ' \
                                  f'normal force {f:.3f} N'
        return out

    def colors(self) -> Optional[List[Tuple[float, float, float]]]:
        """Marker colour per effector from the last check (None: nothing checked)."""
        if self.check is None:
            return None
        return [utilisation_color(s, u) for s, u in zip(self.check.status, self.check.utilisation)]


def utilisation_color(status: str, utilisation: float) -> Tuple[float, float, float]:
    """Green at 0, yellow at 0.5, red at 1 and beyond; magenta for a pulling contact.

    :param status: the contact's status.
    :param utilisation: its utilisation (NaN when undefined).
    :return: ``(r, g, b)``.
    """
    if status == 'pulling':
        return 1.0, 0.0, 1.0
    if status == 'slipping':
        return 1.0, 0.0, 0.0
    if np.isnan(utilisation):
        return 0.1, 0.4, 1.0
    u = float(np.clip(utilisation, 0.0, 1.0))
    return min(1.0, 2.0 * u), min(1.0, 2.0 * (1.0 - u)), 0.0
