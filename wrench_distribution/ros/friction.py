"""Node-side friction: the core's cone check and auto mode, diagnostics, markers, topics.

The nodes call this with a few lines; everything here is per message or per solver:
a :class:`~wrench_distribution.core.friction.FrictionModel` is built once per
``LoadDistributor`` (per contact configuration) and reused.
"""
from typing import List, Optional, Tuple

import numpy as np
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from wrench_distribution.config.schema import default_of
from wrench_distribution.core.codec import join_labels
from wrench_distribution.core.friction import (
    FrictionCheck, FrictionInfeasibleError, FrictionModel, FrictionOptions, STATUSES,
)
from wrench_distribution.params import contact_friction_fields
from wrench_distribution.ros.diagnostics import ERROR, OK, WARN

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

    def apply(self, distributor, wrench: np.ndarray, lam, out: np.ndarray,
              object_frame: bool) -> Optional[np.ndarray]:
        """Check (and in auto mode correct) one set of commands.

        :param distributor: the solver that made ``out``.
        :param wrench: the desired wrench (6,).
        :param lam: the prescribed internal load (coordinates) or None.
        :param out: (n, 6) commands in the node's command frame (before any sign flip).
        :param object_frame: whether ``out`` is in object axes.
        :return: the commands to publish, or None when auto mode finds no internal load.
        """
        model = self.model(distributor)
        contact = out if not object_frame else distributor.wrench_commands(
            wrench, distributor.internal_wrench(lam) if lam is not None and model.m else None)
        self.infeasible = None
        if self.options.mode == 'auto':
            try:
                added = model.required_load(contact)
            except FrictionInfeasibleError as error:
                self.infeasible = str(error)
                self.check = model.check(contact)
                return None
            self.added = added
            if model.m:
                contact = contact + np.einsum('ikj,j->ik', model.basis_contact, added)
                out = contact if not object_frame else out + distributor.internal_wrench(
                    added, object_frame=True).reshape(-1, 6)
        self.check = model.check(contact)
        self.last_good = out
        return out

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


def friction_message(check: FrictionCheck, names) -> Float64MultiArray:
    """Return the analyzer's per-effector friction topic: rows ``[utilisation, normal force, code]``.

    Utilisation is -1 where undefined (pulling, no coefficient); the code indexes
    :data:`~wrench_distribution.core.friction.STATUSES`. Never NaN.

    :param check: the friction state.
    :param names: effector names (first dimension's label).
    :return: the message.
    """
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label=join_labels(names), size=len(names), stride=3 * len(names)),
        MultiArrayDimension(label='utilisation;normal_force;status(' + ','.join(STATUSES) + ')',
                            size=3, stride=3)]
    rows = np.column_stack([np.nan_to_num(check.utilisation, nan=-1.0),
                            check.normal_force, check.codes])
    msg.data = [float(x) for x in rows.reshape(-1)]
    return msg
