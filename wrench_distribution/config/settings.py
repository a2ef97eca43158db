"""The typed settings of each engine part, built from validated parameters (no ROS import).

A setting has one name, one type and one unit here (durations in integer nanoseconds); the
node configurations of :mod:`.nodes` hold them, and the engines read only them. Each is
built by one function from the values :func:`~.validation.validate_params` returned.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from wrench_distribution.core.codec import seconds_to_ns
from wrench_distribution.core.limits import CommandLimits
from wrench_distribution.core.prescription import InternalLoadPrescription

from .arrays import expand_limits, per_effector
from .schema import CONSISTENCY_CHECKS


@dataclass(frozen=True)
class GainSettings:
    """A PI loop's gains and limits (the internal-load or the friction feedback).

    :param enabled: whether the loop is closed.
    :param kp: proportional gains (one for all elements, or one per element).
    :param ki: integral gains (1/s).
    :param integral_limit: largest |integral term|.
    :param correction_limit: largest |correction|.
    :param timeout_ns: a measurement older than this is stale.
    :param on_sensor_fault: ``hold`` or ``release`` while the measurement's sensors are in doubt.
    """

    enabled: bool
    kp: Tuple[float, ...]
    ki: Tuple[float, ...]
    integral_limit: float
    correction_limit: float
    timeout_ns: int
    on_sensor_fault: str = 'hold'


@dataclass(frozen=True)
class FrictionSettings:
    """Friction of one node.

    :param names: effector names.
    :param mode: ``off``, ``check`` or ``auto``.
    :param margin: ``friction_margin``.
    :param on_infeasible: ``hold`` or ``zero`` (auto mode without a feasible load).
    :param contact_fields: per effector ``{'friction': mu or None, 'normal': (x, y, z)}``.
    :param point_contacts: whether a contact is a (push-only) point contact.
    :param feedback: the friction feedback's loop (never enabled on the analyzer).
    """

    names: Tuple[str, ...]
    mode: str
    margin: float
    on_infeasible: str
    contact_fields: Tuple[dict, ...]
    point_contacts: bool
    feedback: GainSettings


@dataclass(frozen=True)
class WeightSettings:
    """``hold_object_weight``: the object's weight added to the desired wrench.

    :param enabled: whether it is added.
    :param mass: ``object_mass`` (kg).
    :param gravity: gravity in ``frame`` (m/s^2).
    :param frame: ``gravity_frame`` ('': the object frame).
    """

    enabled: bool
    mass: float
    gravity: Tuple[float, float, float]
    frame: str


@dataclass(frozen=True)
class ContactWeightSettings:
    """The contact weights (docs/theory.md, section 16; docs/legs_and_hands.md).

    :param targets: ``contact_weights``, one per effector (all 1 when the parameter is empty).
    :param transition_ns: ``contact_transition_time``: a weight moves by at most 1 in it (0: at
        once).
    """

    targets: Tuple[float, ...]
    transition_ns: int


@dataclass(frozen=True)
class InputSettings:
    """What a desired wrench must satisfy, and the watchdog.

    :param object_frame: the frame it must be in.
    :param timeout_ns: ``input_timeout`` (0: no watchdog).
    :param max_future_ns: ``max_future`` (0: no check).
    :param on_timeout: ``zero``, ``stop`` or ``hold_object_weight``.
    """

    object_frame: str
    timeout_ns: int
    max_future_ns: int
    on_timeout: str


@dataclass(frozen=True)
class OutputSettings:
    """How commands and markers are sent.

    :param object_axes: commands in object axes (``command_frame: object``).
    :param negate: ``command_sign: -1``.
    :param markers: ``publish_markers``.
    :param markers_period_ns: ``markers_period``.
    :param marker_scale: ``marker_scale`` (m per N).
    :param object_com: ``object_com`` (the markers' resultant arrow).
    """

    object_axes: bool
    negate: bool
    markers: bool
    markers_period_ns: int
    marker_scale: float
    object_com: Tuple[float, float, float]


@dataclass(frozen=True)
class DistributionSettings:
    """Everything the distribution engine reads beyond the grasp.

    :param names: effector names.
    :param limits: the command limits (core ``CommandLimits``, per effector).
    :param prescription: the internal load the parameters prescribe.
    :param feedback: the internal-load feedback.
    :param friction: friction (mode from ``friction_mode``).
    :param weight: ``hold_object_weight``.
    :param contact_weights: the contact weights' targets and ramp.
    :param input: desired-wrench checks and watchdog.
    :param output: commands and markers.
    :param opt_in: ``allow_unsafe_runtime_changes``.
    :param defaults_in_force: ``name=value`` of each limit left unset (its package default).
    """

    names: Tuple[str, ...]
    limits: CommandLimits
    prescription: InternalLoadPrescription
    feedback: GainSettings
    friction: FrictionSettings
    weight: WeightSettings
    contact_weights: ContactWeightSettings
    input: InputSettings  # noqa: A003 (the input's settings)
    output: OutputSettings
    opt_in: bool
    defaults_in_force: Tuple[str, ...]


#: what the sensor set's consistency is checked against: nothing, or the object at rest (its
#: weight when ``object_mass`` is known, else a constant)
CONSISTENCY_MODES = CONSISTENCY_CHECKS


@dataclass(frozen=True)
class HealthSettings:
    """The sensor health checks (docs/health.md).

    :param ratings: (n, 6) rated range per sensor axis (N, N m), 0 where unknown
        (``sensor_ranges``).
    :param tolerance: ``(force N, torque N m)`` of the set's consistency
        (``consistency_tolerance``).
    :param consistency: one of :data:`CONSISTENCY_MODES`.
    :param point_torques: check each point contact's torque (six-axis sensors on point contacts).
    """

    ratings: Tuple[Tuple[float, ...], ...]
    tolerance: Tuple[float, float] = (1.0, 0.2)
    consistency: str = 'off'
    point_torques: bool = False

    def __post_init__(self) -> None:
        if self.consistency not in CONSISTENCY_MODES:
            raise ValueError(f'consistency {self.consistency!r}: accepted: '
                             f"{', '.join(CONSISTENCY_MODES)}")


def health_settings(v: Mapping) -> HealthSettings:
    """Build the health checks' settings from validated analyzer parameters.

    :param v: the parameters (``sensor_ranges``: 6 numbers for every sensor, 6 per effector,
        or none).
    :return: the settings.
    """
    n = len(v['effectors'])
    ratings = list(v['sensor_ranges']) or [0.0] * 6
    table = ratings * n if len(ratings) == 6 else ratings
    return HealthSettings(tuple(tuple(table[6 * i:6 * i + 6]) for i in range(n)),
                          tuple(v['consistency_tolerance']), v['consistency_check'])


@dataclass(frozen=True)
class AnalysisSettings:
    """What the analysis engine reads beyond the grasp and the sensors.

    :param max_future_ns: ``max_future`` (0: no check).
    :param sync_tolerance_ns: ``sync_tolerance``.
    :param max_age_ns: ``max_age`` (0: no check).
    :param gravity_frame: ``gravity_frame`` ('': the object frame).
    :param sensor_biases: ``sensor_biases`` (6 n numbers, or empty).
    :param ft_frames: expected ``frame_id`` per F/T stream ('': any).
    :param sensor_frames: ``sensor_frames`` (tf), or empty.
    :param object_mass: ``object_mass`` (a held tare).
    :param friction: friction in check mode.
    :param tare_samples: ``tare_samples``.
    :param tare_state: ``tare_state``.
    :param orientation_source: ``object_orientation_source`` (``tf`` or ``topic``).
    :param orientation_timeout_ns: ``orientation_timeout``.
    :param output_frame: ``output_frame`` (``contact`` or ``object``).
    :param health: the sensor health checks.
    :param loaded_force: ``contact_loaded_force`` (N): the floor of the loaded threshold.
    """

    max_future_ns: int
    sync_tolerance_ns: int
    max_age_ns: int
    gravity_frame: str
    sensor_biases: Tuple[float, ...]
    ft_frames: Tuple[str, ...]
    sensor_frames: Tuple[str, ...]
    object_mass: float
    friction: FrictionSettings
    tare_samples: int
    tare_state: str
    orientation_source: str
    orientation_timeout_ns: int
    output_frame: str
    health: HealthSettings
    loaded_force: float = 1.0


def contact_friction_fields(v: Mapping) -> Tuple[dict, ...]:
    """Build the per-effector ``Contact`` keyword arguments of the friction parameters.

    From ``friction_coefficients`` and ``contact_normals`` (0 or empty: no friction; empty
    normals: +z).

    :param v: validated parameters of a node holding them.
    :return: one ``{'friction': mu or None, 'normal': (x, y, z)}`` per effector.
    """
    n = len(v['effectors'])
    mu = per_effector(v['friction_coefficients'], n, 1, (0.0,))
    normals = per_effector(v['contact_normals'], n, 3, (0.0, 0.0, 1.0))
    return tuple({'friction': float(m[0]) if m[0] > 0 else None, 'normal': tuple(normal)}
                 for m, normal in zip(mu, normals))


def friction_settings(v: Mapping, mode: Optional[str] = None) -> FrictionSettings:
    """Build a node's friction settings from its validated parameters.

    :param v: the parameters (the analyzer's have no feedback and no fallback: off and hold).
    :param mode: the mode (None: ``friction_mode``).
    :return: the settings.
    """
    distributor = 'friction_feedback' in v
    limit = float(v['friction_feedback_limit']) if distributor else 0.0
    feedback = GainSettings(
        bool(v['friction_feedback']), (float(v['friction_feedback_kp']),),
        (float(v['friction_feedback_ki']),), limit, limit,
        seconds_to_ns(v['friction_feedback_timeout']), v['on_sensor_fault']) if distributor else GainSettings(
            False, (0.0,), (0.0,), 0.0, 0.0, 0)
    return FrictionSettings(names=tuple(v['effectors']), mode=mode or v['friction_mode'],
                            margin=float(v['friction_margin']),
                            on_infeasible=v['on_friction_infeasible'] if distributor else 'hold',
                            contact_fields=contact_friction_fields(v),
                            point_contacts='point' in v['contact_types'], feedback=feedback)


def distribution_settings(v: Mapping, prescription: InternalLoadPrescription,
                          defaults_in_force: Tuple[str, ...]) -> DistributionSettings:
    """Build the distribution engine's settings from validated distributor parameters.

    :param v: the parameters (:func:`~.validation.validate_params`).
    :param prescription: the prescription the parameters ask for (parsed once, by the caller).
    :param defaults_in_force: the limits the user left at their defaults.
    :return: the settings.
    """
    names = tuple(v['effectors'])
    n = len(names)
    limits = CommandLimits(list(names), list(expand_limits(v['force_limits'], n)),
                           list(expand_limits(v['torque_limits'], n)), v['desired_force_limit'],
                           v['desired_torque_limit'], v['internal_load_limit'], v['on_limit'])
    feedback = GainSettings(bool(v['internal_load_feedback']), tuple(v['feedback_kp']),
                            tuple(v['feedback_ki']), v['feedback_integral_limit'],
                            v['feedback_correction_limit'], seconds_to_ns(v['feedback_timeout']),
                            v['on_sensor_fault'])
    return DistributionSettings(
        names=names, limits=limits, prescription=prescription, feedback=feedback,
        friction=friction_settings(v),
        weight=WeightSettings(bool(v['hold_object_weight']), float(v['object_mass']),
                              tuple(v['gravity']), v['gravity_frame']),
        contact_weights=ContactWeightSettings(
            tuple(float(w) for w in v['contact_weights']) or (1.0,) * n,
            seconds_to_ns(v['contact_transition_time'])),
        input=InputSettings(v['object_frame'], seconds_to_ns(v['input_timeout']),
                            seconds_to_ns(v['max_future']), v['on_timeout']),
        output=OutputSettings(v['command_frame'] == 'object', v['command_sign'] == -1,
                              bool(v['publish_markers']), seconds_to_ns(v['markers_period']),
                              float(v['marker_scale']), tuple(v['object_com'])),
        opt_in=bool(v['allow_unsafe_runtime_changes']), defaults_in_force=defaults_in_force)


def analysis_settings(v: Mapping) -> AnalysisSettings:
    """Build the analysis engine's settings from validated analyzer parameters.

    :param v: the parameters.
    :return: the settings.
    """
    n = len(v['effectors'])
    return AnalysisSettings(
        max_future_ns=seconds_to_ns(v['max_future']),
        sync_tolerance_ns=seconds_to_ns(v['sync_tolerance']),
        max_age_ns=seconds_to_ns(v['max_age']),
        gravity_frame=v['gravity_frame'], sensor_biases=tuple(v['sensor_biases']),
        ft_frames=tuple(v['ft_frames'] or [''] * n), sensor_frames=tuple(v['sensor_frames']),
        object_mass=float(v['object_mass']), friction=friction_settings(v, 'check'),
        tare_samples=int(v['tare_samples']), tare_state=v['tare_state'],
        orientation_source=v['object_orientation_source'],
        orientation_timeout_ns=seconds_to_ns(v['orientation_timeout']),
        output_frame=v['output_frame'], health=health_settings(v),
        loaded_force=float(v['contact_loaded_force']))
