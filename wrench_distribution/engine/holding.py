"""Holding the object without extra code: its weight added to the desired wrench (no ROS).

With ``hold_object_weight`` the distributor commands ``h_o + w`` instead of ``h_o``, where
``w`` is the wrench the effectors must add to carry the object's weight: ``-m g_o`` at the
centre of mass (so no torque about it, and ``h_o`` is about the centre of mass), with
``m = object_mass`` and ``g_o`` gravity in the object frame. A zero desired wrench then
holds the object at rest; a non-zero one accelerates it as if it weighed nothing.

Gravity takes the analyzer's form (:class:`~wrench_distribution.engine.sensing.GravityModel`):
``gravity`` is given in ``gravity_frame``; empty, that is the object frame (a constant: the
object does not turn); another frame, ``g_o = R^T g`` with ``R`` the object's orientation in
that frame, offered by the node from tf with the contact poses.
"""
from typing import Callable, Optional

import numpy as np

from wrench_distribution.config.settings import WeightSettings
from wrench_distribution.core import spatial as Q
from .outcome import Outcome


class ObjectWeight:
    """The weight compensation of one configuration.

    :param settings: ``hold_object_weight``, ``object_mass``, ``gravity``, ``gravity_frame``.
    """

    def __init__(self, settings: WeightSettings) -> None:
        self.enabled = settings.enabled
        self.mass = settings.mass
        self.gravity = np.asarray(settings.gravity, float)
        self.frame = settings.frame
        #: gravity in the object frame, or None until an orientation came (gravity_frame set)
        self.gravity_object: Optional[np.ndarray] = None if self.frame else self.gravity.copy()

    @property
    def needs_orientation(self) -> bool:
        """Whether the object's orientation in ``gravity_frame`` is needed."""
        return self.enabled and bool(self.frame)

    def offer_orientation(self, quaternion) -> None:
        """Take the object's orientation in ``gravity_frame``.

        :param quaternion: ``[qx, qy, qz, qw]`` of the object frame in ``gravity_frame``.
        """
        self.gravity_object = Q.rotate_inverse(np.asarray(quaternion, float), self.gravity)

    def problem(self) -> Optional[str]:
        """Why the weight cannot be added now (no orientation yet), or None."""
        if self.enabled and self.gravity_object is None:
            return ('hold_object_weight: no orientation of the object frame in gravity_frame '
                    f"'{self.frame}' yet")
        return None

    def add_to(self, wrench: np.ndarray) -> None:
        """Add ``-m g_o`` to the force of a desired wrench (in place; no torque about the CoM).

        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame, about the CoM.
        """
        if self.enabled:
            wrench[:3] -= self.mass * self.gravity_object

    def weight_wrench(self) -> Optional[np.ndarray]:
        """Return the wrench that carries the object's weight, ``[-m g_o, 0]`` about the CoM.

        :return: (6,), whether or not ``hold_object_weight`` adds it; None without the
            object's orientation in ``gravity_frame`` yet.
        """
        if self.gravity_object is None:
            return None
        return np.r_[-self.mass * self.gravity_object, np.zeros(3)]

    def held(self, wrench) -> np.ndarray:
        """Return a desired wrench with the weight added (a copy; e.g. for the markers).

        :param wrench: ``[fx, fy, fz, tx, ty, tz]``, object frame, about the CoM.
        :return: the wrench the effectors apply.
        """
        out = np.array(wrench, float)
        if self.gravity_object is not None:
            self.add_to(out)
        return out

    def values(self) -> dict:
        """Diagnostic values: what is added, or ``off``."""
        if not self.enabled:
            return {'hold_object_weight': 'off'}
        where = f"gravity_frame '{self.frame}' (tf)" if self.frame else 'the object frame'
        out = {'hold_object_weight': f'on: {self.mass:g} kg at object_com, gravity '
                                     f'{", ".join(f"{g:g}" for g in self.gravity)} in {where}'}
        if self.gravity_object is not None:
            added = -self.mass * self.gravity_object
            out['held_weight_force'] = ', '.join(f'{f:.6g}' for f in added)
        return out


def stop_outcome(policy: str, n: int, held: Callable[[], Optional[np.ndarray]]) -> Outcome:
    """Return what a stop publishes (deactivate, shutdown): zero wrenches to every effector.

    With ``on_timeout: hold_object_weight`` (legs, hands) the commands that hold the object's
    weight at the weights in force, when they can be made: a standing robot is not dropped by
    a deactivation either.

    :param policy: ``on_timeout``.
    :param n: number of effectors.
    :param held: the engine's :func:`stop_commands` of that policy.
    :return: the stop commands, with the message that says what they are.
    """
    if policy == 'hold_object_weight':
        commands = held()
        if commands is not None:
            return Outcome(commands, 'stop', "the commands that hold the object's weight", 'outputs',
                           'stops_published')
    return Outcome(np.zeros((n, 6)), 'stop', 'zero wrenches to every effector', 'outputs', 'stops_published')


def stop_commands(policy: str, n: int, cache, weight: ObjectWeight, internal: Optional[np.ndarray],
                  friction, limits, output) -> Optional[np.ndarray]:
    """Return what a stop publishes (an input timeout, a deactivation), by ``on_timeout``.

    ``zero``: zero wrenches (arms); ``hold_object_weight``: :func:`hold_commands` (legs and hands: a
    standing robot is never commanded to zero on every foot), None when they cannot be made;
    ``stop``: None (nothing published: the controllers keep their last reference).

    :param policy: ``on_timeout``.
    :param n: number of effectors.
    :param cache: the solver cache (its solver in force, None before the first; its subsets).
    :return: (n, 6) commands, or None.
    """
    if policy == 'zero':
        return np.zeros((n, 6))
    if policy != 'hold_object_weight' or cache.distributor is None:
        return None
    return hold_commands(cache, weight, internal, friction, limits, output)


def hold_commands(cache, weight: ObjectWeight, internal: Optional[np.ndarray], friction,
                  limits, output) -> Optional[np.ndarray]:
    """Commands that hold the object's weight at the weights in force (``on_timeout: hold_object_weight``).

    What a robot that stands on its feet or holds an object in its hand needs when its
    controller falls silent: the object's weight (:meth:`ObjectWeight.weight_wrench`) on the
    contacts of positive weight, with the prescribed internal load and, in friction's auto
    mode, the squeeze that keeps every contact inside its cone; cut uniformly into the command
    limits (never beyond one), with the sign of ``command_sign``.

    :param cache: the solver cache (the solver in force at its weights, a released contact at 0;
        the contact subsets the weights mix).
    :param weight: the object's weight.
    :param internal: the prescribed internal load's applied coordinates, or None.
    :param friction: the friction stage.
    :param limits: the command limits.
    :param output: the output settings (frame and sign).
    :return: (n, 6) commands, or None when the weight cannot be held (no orientation of the
        object yet, a wrench the contacts cannot produce, no squeeze that holds).
    """
    from wrench_distribution.core import WrenchDistributionError
    wrench = weight.weight_wrench()
    if wrench is None:
        return None
    solver = cache.distributor
    try:
        out = solver.wrench_commands(wrench, solver.internal_wrench(internal, output.object_axes),
                                     output.object_axes)
    except WrenchDistributionError:
        return None
    if friction.active and friction.options.mode == 'auto':
        out = friction.apply(solver, out, output.object_axes, corners=cache.corners(), wrench=wrench,
                             applied=internal)
        if out is None:
            return None
    over = limits.check_commands(out)
    if over is not None:
        out = out * over.scale
    return -out if output.negate else out
