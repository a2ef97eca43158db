"""Real arm models (Panda, UR5) from example-robot-data, loaded with Pinocchio.

Each arm is one fixed-base :class:`pinocchio.Model` with its base placement in the world
and its gripper's inertia baked in, the gripper fingers locked, and the frame of the
flange F/T sensor where a grasp acts. Simulator only: never imported by the nodes, the
core, the engines or the bag tools.
"""
from __future__ import annotations

from dataclasses import dataclass
import importlib.metadata
import pathlib
from typing import Sequence

import numpy as np

from wrench_distribution.config.sim import ARM_ROBOTS

try:
    import pinocchio
except ImportError as error:  # pragma: no cover - the sim extra installs it
    raise ImportError(
        'the arms-with-joints simulator needs Pinocchio: pip install .[sim] '
        '(or pip install -r requirements-sim.txt)') from error

#: Robots shipped by example-robot-data that the simulator knows (their parameter's values).
ROBOTS = ARM_ROBOTS

#: Per robot: URDF path under ``robots/``, flange frame, joints to lock, home posture.
_CATALOGUE = {
    'panda': {
        'urdf': 'panda_description/urdf/panda.urdf',
        'flange': 'panda_link8',
        'locked': ('panda_finger_joint1', 'panda_finger_joint2'),
        'home': (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785),
    },
    'ur5': {
        'urdf': 'ur_description/urdf/ur5_robot.urdf',
        'flange': 'tool0',
        'locked': (),
        'home': (0.0, -1.571, 1.571, -1.571, -1.571, 0.0),
    },
}

#: Radius of the solid sphere that stands for the gripper's rotational inertia, m.
GRIPPER_RADIUS = 0.05


@dataclass(frozen=True)
class ArmModel:
    """One arm: its Pinocchio model, flange frame, limits and home posture.

    :param name: effector name, e.g. ``'left_arm'``.
    :param robot: one of :data:`ROBOTS`.
    :param model: base placement and gripper inertia baked in, fingers locked.
    :param flange_frame: frame id of the F/T sensor frame at the flange; the grasp acts here.
    :param lower: joint position lower limits (nq,).
    :param upper: joint position upper limits (nq,).
    :param velocity_limit: joint velocity limits (nv,).
    :param effort_limit: joint torque limits (nv,).
    :param home: a comfortable configuration (nq,).
    """

    name: str
    robot: str
    model: pinocchio.Model
    flange_frame: int
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    home: np.ndarray


def _robots_directory() -> pathlib.Path:
    """Return example-robot-data's ``robots`` directory, found through its distribution.

    :return: the directory holding ``panda_description``, ``ur_description``, ...
    :raises ImportError: when example-robot-data is not installed.
    """
    try:
        distribution = importlib.metadata.distribution('example-robot-data')
    except importlib.metadata.PackageNotFoundError as error:
        raise ImportError(
            'the arms-with-joints simulator needs example-robot-data: pip install .[sim] '
            '(or pip install -r requirements-sim.txt)') from error
    for file in distribution.files or ():
        parts = pathlib.PurePosixPath(str(file)).parts
        if 'example-robot-data' in parts and parts[-1] == 'panda.urdf':
            index = parts.index('example-robot-data')
            return pathlib.Path(distribution.locate_file(
                pathlib.PurePosixPath(*parts[:index + 1], 'robots')))
    raise ImportError('example-robot-data is installed but ships no robots/ directory')


def robot_description(robot: str) -> pathlib.Path:
    """Return the URDF that example-robot-data ships for ``robot``.

    :param robot: one of :data:`ROBOTS`.
    :return: the URDF's path.
    :raises ValueError: for an unknown robot.
    """
    if robot not in _CATALOGUE:
        raise ValueError(f'robot must be one of {ROBOTS}, got {robot!r}')
    return _robots_directory() / _CATALOGUE[robot]['urdf']


def _place_base(model: pinocchio.Model, base: pinocchio.SE3) -> None:
    """Move everything attached to the universe by ``base`` (in place).

    :param model: fixed-base model.
    :param base: placement of the robot's root link in the world.
    """
    for joint in range(1, model.njoints):
        if model.parents[joint] == 0:
            model.jointPlacements[joint] = base * model.jointPlacements[joint]
    for frame in list(model.frames)[1:]:  # frame 0 is the world itself
        if frame.parentJoint == 0:
            frame.placement = base * frame.placement


def _add_gripper(model: pinocchio.Model, flange_frame: int, mass: float,
                 centre_of_mass: Sequence[float]) -> None:
    """Add the gripper's inertia (a solid sphere) to the joint that carries the flange.

    :param model: the arm's model, changed in place.
    :param flange_frame: frame id of the flange.
    :param mass: gripper mass, kg (0 adds nothing).
    :param centre_of_mass: gripper centre of mass in the flange frame, m.
    """
    if mass == 0.0:
        return
    frame = model.frames[flange_frame]
    gripper = pinocchio.Inertia.FromSphere(mass, GRIPPER_RADIUS)
    gripper.lever = np.asarray(centre_of_mass, dtype=float)
    joint = frame.parentJoint
    model.inertias[joint] = model.inertias[joint] + frame.placement.act(gripper)


def load_arm(robot: str, name: str, base: pinocchio.SE3 | None = None,
             gripper_mass: float = 0.0,
             gripper_com: Sequence[float] = (0.0, 0.0, 0.0)) -> ArmModel:
    """Load ``robot`` from example-robot-data, mounted at ``base``, with a gripper's mass.

    :param robot: one of :data:`ROBOTS`.
    :param name: effector name.
    :param base: placement of the robot's base in the world (identity when None).
    :param gripper_mass: mass of the gripper beyond the flange, kg (>= 0).
    :param gripper_com: the gripper's centre of mass in the flange frame, m.
    :return: the arm.
    :raises ValueError: for an unknown robot, a negative or non-finite mass or a bad
        centre of mass.
    """
    centre_of_mass = np.asarray(gripper_com, dtype=float)
    if not (np.isfinite(gripper_mass) and gripper_mass >= 0.0):
        raise ValueError(f'gripper_mass must be finite and >= 0, got {gripper_mass!r}')
    if centre_of_mass.shape != (3,) or not np.all(np.isfinite(centre_of_mass)):
        raise ValueError(f'gripper_com must be 3 finite values, got {gripper_com!r}')
    full = pinocchio.buildModelFromUrdf(str(robot_description(robot)))
    entry = _CATALOGUE[robot]
    locked = [full.getJointId(joint) for joint in entry['locked']]
    model = pinocchio.buildReducedModel(full, locked, pinocchio.neutral(full)) if locked \
        else full
    _place_base(model, pinocchio.SE3.Identity() if base is None else base)
    flange_frame = model.getFrameId(entry['flange'])
    _add_gripper(model, flange_frame, float(gripper_mass), centre_of_mass)
    return ArmModel(
        name=name, robot=robot, model=model, flange_frame=flange_frame,
        lower=model.lowerPositionLimit.copy(), upper=model.upperPositionLimit.copy(),
        velocity_limit=model.velocityLimit.copy(), effort_limit=model.effortLimit.copy(),
        home=np.array(entry['home'], dtype=float))
