"""The squeeze friction's auto mode adds, for one margin: on the solver in force, or mixed over its contact subsets.

A squeeze is a callable ``margin -> (part of the commands (n, 6), applied coordinates (m,))``
that raises :class:`~wrench_distribution.core.friction.FrictionInfeasibleError` when no internal
load keeps the contacts inside their cones at that margin; :class:`~.friction.FrictionStage`
calls it at the feedback's margin and at ``friction_margin`` (and blends the two within the
command limits).

- :class:`SingleSqueeze`: every weight 0 or 1 (no contact in transition): the friction program
  of the solver in force, as without weights.
- :class:`SubsetSqueeze`: some contacts in transition. The commands are the mixture of the
  commands of the contact subsets (eq. 16.1; the prescribed load split as
  :meth:`.solver.WeightedSolver.share_of` says), so each subset gets the squeeze its own
  commands need and the squeezes are mixed with the subsets' probabilities. The cones being
  convex, the mixture of commands each inside them is inside them (docs/theory.md, 16.6): the
  program has a solution at every tick of a ramp that :func:`~wrench_distribution.core.release.check_transition`
  allowed. A leaving contact gets the squeeze of the subsets that hold it, times their
  probability: its command goes to zero with its weight, and is exactly zero once released.
  One squeeze on the mixed commands would not do: a direction that moves no total normal force
  (four feet's warp) is free for the program, and it would keep loading a foot until the tick
  it leaves.
"""
from typing import Sequence, Tuple

import numpy as np

from wrench_distribution.core.friction import FrictionModel


def contact_frame_commands(solver, out: np.ndarray, object_frame: bool) -> np.ndarray:
    """Return (n, 6) commands in the contact frames (rotated from object axes when ``object_frame``).

    A command in object axes about the contact point is ``(R f, R t)`` of the same command in the
    contact frame, ``R`` the contact's orientation in the object frame.

    :param solver: the solver (its contacts' rotations).
    :param out: (n, 6) commands.
    :param object_frame: whether ``out`` is in object axes.
    """
    if not object_frame:
        return out
    rotations = np.array([c.rotation for c in solver.contacts])
    blocks = out.reshape(-1, 2, 3)
    return np.einsum('nji,nkj->nki', rotations, blocks).reshape(-1, 6)


class SingleSqueeze:
    """The squeeze of the solver in force (no contact in transition).

    :param view: the solver as friction sees it (``friction_view``: elements scaled by ``phi``).
    :param model: its friction model.
    :param contact: (n, 6) the commands in the contact frames.
    :param object_frame: the commands are in object axes.
    """

    def __init__(self, view, model: FrictionModel, contact: np.ndarray, object_frame: bool) -> None:
        self.view, self.model, self.contact, self.object_frame = view, model, contact, object_frame

    def __call__(self, margin: float) -> Tuple[np.ndarray, np.ndarray]:
        """Return the squeeze at ``margin``: its part of the commands and its applied coordinates."""
        added = self.model.required_load(self.contact, margin)
        if not self.model.m:
            return np.zeros_like(self.contact), added
        return (self.view.internal_wrench(added, self.object_frame).reshape(-1, 6),
                self.view.element_scales * added)


class SubsetSqueeze:
    """The mixture of the squeezes of the contact subsets a transition mixes (module docstring).

    :param stage: the friction stage (the subsets' friction models).
    :param solver: the ``WeightedSolver`` in force.
    :param corners: ``[(probability, subset solver)]``.
    :param wrench: the desired wrench the commands carry (object frame, about the CoM).
    :param applied: the applied internal-load coordinates in the commands, or None.
    :param object_frame: the commands are in object axes.
    """

    def __init__(self, stage, solver, corners: Sequence, wrench: np.ndarray, applied, object_frame: bool) -> None:
        self.solver, self.object_frame = solver, object_frame
        self.parts = []
        for probability, subset in corners:
            commands = subset.wrench_commands(wrench, solver.share_of(applied, subset, object_frame), object_frame)
            self.parts.append((probability, subset, stage.model(subset.friction_view),
                               contact_frame_commands(subset, commands, object_frame)))

    def __call__(self, margin: float) -> Tuple[np.ndarray, np.ndarray]:
        """Return the mixed squeeze at ``margin``: its part of the commands and its applied coordinates."""
        commands = np.zeros((self.solver.n, 6))
        stacked = np.zeros(6 * self.solver.n)  # object axes: the coordinates read it
        for probability, subset, model, contact in self.parts:
            added = model.required_load(contact, margin)
            if model.m:
                commands += probability * subset.internal_wrench(added, self.object_frame).reshape(-1, 6)
                stacked += probability * subset.internal_wrench(added, True)
        return commands, self.solver.coordinates(stacked)
