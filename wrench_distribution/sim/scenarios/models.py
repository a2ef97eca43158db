"""The effector models of the simulator: one entry each, and nothing else branches on the name.

An entry says how the model's physics is built from the validated ``object_sim``
parameters, what its own checks of them are, what a run's sections need before it starts,
what it needs installed, what ``object_sim`` does with it (the commands as wrench references
in the F/T sensor frames, a status topic) and what the demo reports of its runs. The names
are the ``effector_model`` values the schema accepts (``config/sim.py``,
:data:`~wrench_distribution.config.sim.EFFECTOR_MODELS`); a new model is one entry here
and its name there (``test/sim/test_effector_models.py`` checks that they agree).

The entries of the arms with joints check and require without importing Pinocchio (the
simulator's optional extra); their builder imports it when it is called.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from .arms import build_admittance_arms, check_rigid_grasps, follow_controller_move
from .parts import build_held_object
from ...config.index import INDEX
from ...config.schema import ConfigError
from ...config.sim import SIM_DEFAULTS


def _nothing(*_) -> None:
    """Do nothing: a hook the model does not need."""


@dataclass(frozen=True)
class EffectorModel:
    """One effector model of ``object_sim``.

    :param name: the ``effector_model`` value.
    :param build: validated ``object_sim`` parameters -> the physics at its initial state
        (with its ``sensors``).
    :param check: the model's own checks of the validated ``object_sim`` parameters
        (raises ``ConfigError``).
    :param prepare: changes to a run's sections (node name -> parameters) before it starts.
    :param require: refuses (``ValueError`` naming the install) when an optional package
        the model needs is missing.
    :param wrench_references: the node takes each command as its arm's wrench reference,
        in the arm's F/T sensor frame (``admittance_controller``'s ``~/wrench_reference``),
        and drops one in another frame.
    :param status: ``(topic, ;-joined column labels)`` of the physics' ``status()`` rows,
        one per effector, that the node publishes; None: none.
    :param element_summary: the demo writes the per-element summary of a run
        (``elements.json``) unasked.
    """

    name: str
    build: Callable[[Mapping], object]
    check: Callable[[Mapping], None] = _nothing
    prepare: Callable[[dict], None] = _nothing
    require: Callable[[], None] = _nothing
    wrench_references: bool = False
    status: Optional[tuple] = None
    element_summary: bool = False


#: Columns of ``joint_arms/status``, per arm: smallest singular value of the flange Jacobian
#: now and so far, torque saturations, joint-reference clamps at a joint limit, joint-limit
#: violations (counts of controller periods).
JOINT_STATUS = 'sigma_min;sigma_min_so_far;torque_saturations;limit_clamps;limit_violations'


def _build_joint_arms(p: Mapping):
    """Build the arms with joints (imports Pinocchio, the simulator's extra)."""
    from .joints import build_joint_sim
    return build_joint_sim(p)


def _check_joint_arms(p: Mapping) -> None:
    """Check the arms with joints: rigid grasps, their bases given, no turns before the grasp."""
    check_rigid_grasps(p)
    specs = INDEX['object_sim']
    if not p['arm_base_positions']:
        raise ConfigError("parameter 'arm_base_positions': the arms with joints need their "
                          f"bases; accepted: {specs['arm_base_positions'].constraint_text()}")
    if p['free_tilts']:
        raise ConfigError("parameter 'free_tilts': not with effector_model joints (the arms' "
                          'joints are not posed before the grasp); accepted: empty, or '
                          'effector_model force or admittance')


def _require_sim_extra() -> None:
    """Refuse a scenario of arms with joints when the simulator's extra is not installed.

    :raises ValueError: naming ``pip install .[sim]``
    """
    import importlib.metadata
    import importlib.util
    missing = [] if importlib.util.find_spec('pinocchio') else ['pin']
    try:
        importlib.metadata.distribution('example-robot-data')
    except importlib.metadata.PackageNotFoundError:
        missing.append('example-robot-data')
    if missing:
        raise ValueError(f'the arms with joints need {" and ".join(missing)}, the simulator\'s '
                         'optional extra: pip install .[sim]  (or pip install -r '
                         'requirements-sim.txt)')


#: The registry: ``effector_model`` value -> its entry.
EFFECTOR_MODELS = {model.name: model for model in (
    EffectorModel('force', build_held_object),
    EffectorModel('admittance', build_admittance_arms, check=check_rigid_grasps,
                  prepare=follow_controller_move, wrench_references=True, element_summary=True),
    EffectorModel('joints', _build_joint_arms, check=_check_joint_arms,
                  prepare=follow_controller_move, require=_require_sim_extra,
                  wrench_references=True, status=('joint_arms/status', JOINT_STATUS),
                  element_summary=True),
)}


def effector_model(params: Mapping) -> EffectorModel:
    """Return the entry of a scenario's effector model.

    :param params: ``object_sim`` parameters, validated or as written (the default model
        where ``effector_model`` is absent).
    :return: the entry
    :raises ConfigError: for a name that is not in the registry
    """
    name = params.get('effector_model', SIM_DEFAULTS['effector_model'])
    try:
        return EFFECTOR_MODELS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"parameter 'effector_model': unknown {name!r}; accepted: "
                          f'{", ".join(EFFECTOR_MODELS)}') from None
