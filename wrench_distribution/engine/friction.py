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
from .friction_mixture import contact_frame_commands, SingleSqueeze, SubsetSqueeze
from .solver import WeightedSolver
from .status import ERROR, OK, WARN


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
        self._models: dict = {}  # id -> (solver, its model): the solver in force and its subsets
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
        """Return the friction model of a solver (built on first use, kept while it is used).

        :param distributor: the solver as friction sees it (a ``WeightedSolver``'s
            ``friction_view``, or a ``LoadDistributor``).
        :return: its model.
        """
        found = self._models.get(id(distributor))
        if found is None or found[0] is not distributor:
            found = self._models[id(distributor)] = (distributor, FrictionModel(distributor, self.options))
        return found[1]

    def _keep_models(self, used) -> None:
        """Forget the models of solvers no longer in use (the subsets of an ended transition)."""
        keep = {id(view) for view in used}
        self._models = {key: value for key, value in self._models.items() if key in keep}

    def apply(self, solver, out: np.ndarray, object_frame: bool, now_ns: int = 0, limits=None,
              corners=None, wrench=None, applied=None) -> Optional[np.ndarray]:
        """Auto mode: add the internal load that keeps every contact inside its cone.

        The contact-frame commands are ``out`` itself, rotated when it is in object axes
        (never rebuilt from the prescription: what is checked is what is sent). The margin
        is the friction feedback's effective one (``friction_margin`` while it is off).

        While contacts are in transition (``corners``: more than one contact subset), each subset's
        commands get their own squeeze and the squeezes are mixed as the subsets are (eq. 16.1,
        :class:`.friction_mixture.SubsetSqueeze`): every subset's commands inside the cones make
        their mixture inside them (docs/theory.md, 16.6), and a leaving contact gets its
        subsets' squeeze times its weight, down to exactly 0 as it is released.

        :param solver: the ``WeightedSolver`` that made ``out`` (or a ``LoadDistributor``).
        :param out: (n, 6) commands in the node's command frame (before any sign flip).
        :param object_frame: whether ``out`` is in object axes.
        :param now_ns: steady time (the feedback's staleness and release ramp).
        :param limits: the command limits (``CommandLimits``): the load the tightened
            margin adds beyond ``friction_margin``'s is cut back to stay inside them.
        :param corners: ``[(probability, subset solver)]`` (``DistributorCache.corners``), or None.
        :param wrench: the desired wrench the commands carry (with ``corners``).
        :param applied: the applied internal-load coordinates in ``out`` (with ``corners``), or None.
        :return: the corrected commands, or None when no internal load keeps the contacts
            inside their cones (``infeasible`` says why); :attr:`added` is the load applied.
        """
        view = solver.friction_view if isinstance(solver, WeightedSolver) else solver
        model = self.model(view)
        contact = contact_frame_commands(view, out, object_frame)
        self.infeasible = None
        self.added = None
        if self.options.mode != 'auto':
            return out
        if corners is not None and len(corners) > 1:
            squeeze = SubsetSqueeze(self, solver, corners, wrench, applied, object_frame)
        else:
            corners = None
            squeeze = SingleSqueeze(view, model, contact, object_frame)
        self._keep_models([view] + [subset.friction_view for _, subset in corners or ()])
        margin = self.feedback.effective_margin(now_ns)
        self.saturated = False
        try:
            added = self._required(squeeze, margin)
        except FrictionInfeasibleError as error:
            self.infeasible = str(error)
            self.check = model.check(contact)
            return None
        if margin > self.options.margin and limits is not None:
            added = self._within_limits(squeeze, out, added, limits)
        self.added = added[1]  # the load applied (eq. 16.7)
        return out + added[0]

    def _required(self, squeeze, margin: float) -> tuple:
        """Auto mode's load at ``margin``; at ``friction_margin`` when the tighter cones fail."""
        try:
            return squeeze(margin)
        except FrictionInfeasibleError:
            if margin <= self.options.margin:
                raise
            self.saturated = True  # the tighter cones cannot be met: do not tighten further
            return squeeze(self.options.margin)

    def _within_limits(self, squeeze, out: np.ndarray, added: tuple, limits) -> tuple:
        """Cut the feedback's extra load back until the commands are inside the limits.

        Both loads keep every cone at ``friction_margin`` and the limits are convex, so the
        shares ``a`` of the extra load ``added - nominal`` that fit are an interval [0, a*]
        (empty only when the nominal load is over a limit: the engine's limits then act).

        :param squeeze: margin -> ``(commands' part (n, 6), applied coordinates)``.
        :param added: the load at the tightened margin, as ``squeeze`` gives it.
        :return: the load to add, the same way.
        """
        if limits.check_commands(out + added[0]) is None:
            return added
        self.saturated = True
        nominal = squeeze(self.options.margin)
        if limits.check_commands(out + nominal[0]) is not None:
            return nominal
        low, high = 0.0, 1.0
        for _ in range(BACKOFF_STEPS):
            mid = 0.5 * (low + high)
            if limits.check_commands(out + nominal[0] + mid * (added[0] - nominal[0])) is None:
                low = mid
            else:
                high = mid
        return tuple(a + low * (b - a) for a, b in zip(nominal, added))

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
        contact = contact_frame_commands(distributor, out, object_frame)
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
