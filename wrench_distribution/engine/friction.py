"""Friction for the distributor and analyzer engines: cone check, auto mode, state (no ROS).

A :class:`~wrench_distribution.core.friction.FrictionModel` is built once per
``LoadDistributor`` (per contact configuration) and reused; the distributor engine calls
:meth:`FrictionStage.apply` (auto mode's added load) before its limits and
:meth:`FrictionStage.check_sent` on the commands it publishes.
"""
from typing import List, Optional, Tuple

import numpy as np

from wrench_distribution.config.loading import contact_friction_fields
from wrench_distribution.config.schema import default_of
from wrench_distribution.core.friction import (
    FrictionCheck, FrictionInfeasibleError, FrictionModel, FrictionOptions,
)
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


#: Diagnostic level of each contact status.
LEVELS = {'ok': OK, 'unloaded': OK, 'unconstrained': OK, 'near_limit': WARN,
          'slipping': ERROR, 'pulling': ERROR}


class FrictionStage:
    """Friction for one node: configuration, the model per solver, and the last state.

    :param cfg: validated node parameters.
    :param mode: ``'off'``, ``'check'`` or ``'auto'``.
    """

    def __init__(self, cfg: dict, mode: str) -> None:
        self.names = list(cfg['effectors'])
        self.extras = contact_friction_fields(cfg)
        self.options = FrictionOptions(mode, cfg['friction_margin'])
        # the analyzer declares no on_friction_infeasible: its check mode never needs it
        self.on_infeasible = cfg.get('on_friction_infeasible',
                                     default_of('distributor', 'on_friction_infeasible'))
        self._model: Optional[FrictionModel] = None
        self._for = None
        self.check: Optional[FrictionCheck] = None
        self.added: Optional[np.ndarray] = None
        self.infeasible: Optional[str] = None
        self.last_good: Optional[np.ndarray] = None
        points = 'point' in (cfg['contact_types'] or [])
        #: False when the mode is off or no contact has a cone or is unilateral.
        cones = any(x['friction'] is not None for x in self.extras)
        self.active = mode != 'off' and (points or cones)

    def model(self, distributor) -> FrictionModel:
        """Return the friction model of a solver (built on first use).

        :param distributor: the current ``LoadDistributor``.
        :return: its model.
        """
        if self._for is not distributor:
            self._model = FrictionModel(distributor, self.options)
            self._for = distributor
        return self._model

    def apply(self, distributor, out: np.ndarray, object_frame: bool) -> Optional[np.ndarray]:
        """Auto mode: add the internal load that keeps every contact inside its cone.

        The contact-frame commands are ``out`` itself, rotated when it is in object axes
        (never rebuilt from the prescription: what is checked is what is sent).

        :param distributor: the solver that made ``out``.
        :param out: (n, 6) commands in the node's command frame (before any sign flip).
        :param object_frame: whether ``out`` is in object axes.
        :return: the corrected commands, or None when no internal load keeps the contacts
            inside their cones (``infeasible`` says why).
        """
        model = self.model(distributor)
        contact = to_contact_frames(distributor, out) if object_frame else out
        self.infeasible = None
        self.added = None
        if self.options.mode != 'auto':
            return out
        try:
            added = model.required_load(contact)
        except FrictionInfeasibleError as error:
            self.infeasible = str(error)
            self.check = model.check(contact)
            return None
        self.added = added
        if model.m:
            out = out + distributor.internal_wrench(added, object_frame).reshape(-1, 6)
        return out

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

    def values(self) -> dict:
        """Diagnostic key/values: utilisation, normal force and status per effector."""
        if self.check is None:
            return {}
        out = {'friction_mode': self.options.mode}
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
