"""The engines' typed settings, built once from validated parameters (no ROS import).

The distribution and analysis engines read these frozen objects, never the raw parameter
dict: a setting has one name, one type and one unit here (times in integer nanoseconds),
and every parameter it comes from was checked by :func:`~.validation.validate_params`.
:class:`~.loading.DistributorConfig` and :class:`~.loading.AnalyzerConfig` carry them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional, Tuple

from wrench_distribution.core.codec import seconds_to_ns

from .schema import default_of
from .validation import parse_handles, per_effector_limits


@dataclass(frozen=True)
class GainSettings:
    """A PI loop's gains and limits (the internal-load or the friction feedback).

    :param enabled: whether the loop is closed.
    :param kp: proportional gains (one for all elements, or one per element).
    :param ki: integral gains (1/s).
    :param integral_limit: largest |integral term|.
    :param correction_limit: largest |correction|.
    :param timeout_s: a measurement older than this (s) is stale.
    """

    enabled: bool
    kp: Tuple[float, ...]
    ki: Tuple[float, ...]
    integral_limit: float
    correction_limit: float
    timeout_s: float


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

    @classmethod
    def from_params(cls, params: Mapping, mode: Optional[str] = None) -> 'FrictionSettings':
        """Build from validated parameters of either node.

        :param params: the parameters (the analyzer has no feedback and no fallback).
        :param mode: the mode (None: ``friction_mode``).
        :return: the settings.
        """
        from .loading import contact_friction_fields

        def get(name):
            return params.get(name, default_of('distributor', name))
        limit = float(get('friction_feedback_limit'))
        return cls(names=tuple(params['effectors']), mode=mode or params['friction_mode'],
                   margin=float(params['friction_margin']),
                   on_infeasible=get('on_friction_infeasible'),
                   contact_fields=tuple(contact_friction_fields(params)),
                   point_contacts='point' in (params['contact_types'] or []),
                   feedback=GainSettings(bool(get('friction_feedback')),
                                         (float(get('friction_feedback_kp')),),
                                         (float(get('friction_feedback_ki')),), limit, limit,
                                         float(get('friction_feedback_timeout'))))


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
class InputSettings:
    """What a desired wrench must satisfy, and the watchdog.

    :param object_frame: the frame it must be in.
    :param timeout_ns: ``input_timeout`` (0: no watchdog).
    :param max_future_ns: ``max_future`` (0: no check).
    :param on_timeout: ``zero`` or ``stop``.
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
class PrescriptionSettings:
    """The internal load the parameters prescribe (none, coordinates or handles).

    :param coordinates: ``internal_load`` (empty: none).
    :param handles: ``internal_load_handles`` parsed (empty: none).
    """

    coordinates: Tuple[float, ...] = ()
    handles: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DistributionSettings:
    """Everything the distribution engine reads, typed (built by :func:`distribution_settings`).

    :param names: effector names.
    :param limits: the command limits (core ``CommandLimits``).
    :param prescription: the prescribed internal load.
    :param feedback: the internal-load feedback.
    :param friction: friction (mode from ``friction_mode``).
    :param weight: ``hold_object_weight``.
    :param input: desired-wrench checks and watchdog.
    :param output: commands and markers.
    :param opt_in: ``allow_unsafe_runtime_changes``.
    :param defaults_in_force: ``name=value`` of each limit at its package default.
    """

    names: Tuple[str, ...]
    limits: object
    prescription: PrescriptionSettings
    feedback: GainSettings
    friction: FrictionSettings
    weight: WeightSettings
    input: InputSettings  # noqa: A003 (the input's settings)
    output: OutputSettings
    opt_in: bool
    defaults_in_force: Tuple[str, ...]


def distribution_settings(v: Mapping) -> DistributionSettings:
    """Build the distribution engine's settings from validated distributor parameters.

    :param v: the parameters (:func:`~.validation.validate_params`).
    :return: the settings.
    """
    from wrench_distribution.core.limits import CommandLimits
    from .safety import defaults_in_force, OPT_IN
    names = tuple(v['effectors'])
    n = len(names)
    limits = CommandLimits(list(names), per_effector_limits(v['force_limits'], n),
                           per_effector_limits(v['torque_limits'], n), v['desired_force_limit'],
                           v['desired_torque_limit'], v['internal_load_limit'], v['on_limit'])
    feedback = GainSettings(bool(v['internal_load_feedback']), tuple(v['feedback_kp']),
                            tuple(v['feedback_ki']), v['feedback_integral_limit'],
                            v['feedback_correction_limit'], v['feedback_timeout'])
    return DistributionSettings(
        names=names, limits=limits,
        prescription=PrescriptionSettings(tuple(v['internal_load']),
                                          parse_handles(v['internal_load_handles'])),
        feedback=feedback, friction=FrictionSettings.from_params(v),
        weight=WeightSettings(bool(v['hold_object_weight']), float(v['object_mass']),
                              tuple(v['gravity']), v['gravity_frame']),
        input=InputSettings(v['object_frame'], int(v['input_timeout'] * 1e9),
                            int(v['max_future'] * 1e9), v['on_timeout']),
        output=OutputSettings(v['command_frame'] == 'object', v['command_sign'] == -1,
                              bool(v['publish_markers']), seconds_to_ns(v['markers_period']),
                              float(v['marker_scale']), tuple(v['object_com'])),
        opt_in=bool(v.get(OPT_IN, False)), defaults_in_force=tuple(defaults_in_force(v)))


@dataclass(frozen=True)
class AnalysisSettings:
    """What the analysis engine reads beyond the core objects (built by :func:`analysis_settings`).

    :param max_future_ns: ``max_future`` (0: no check).
    :param gravity_frame: ``gravity_frame`` ('': the object frame).
    :param sensor_biases: ``sensor_biases`` (6 n numbers, or empty).
    :param ft_frames: expected ``frame_id`` per F/T stream ('': any).
    :param sensor_frames: ``sensor_frames`` (tf), or empty.
    :param object_mass: ``object_mass`` (a held tare).
    :param friction: friction in check mode.
    :param tare_samples: ``tare_samples``.
    :param tare_state: ``tare_state``.
    :param orientation_source: ``object_orientation_source`` (``tf`` or ``topic``).
    :param object_pose_topic: ``object_pose_topic``.
    :param orientation_timeout_ns: ``orientation_timeout``.
    """

    max_future_ns: int = 0
    gravity_frame: str = ''
    sensor_biases: Tuple[float, ...] = ()
    ft_frames: Tuple[str, ...] = ()
    sensor_frames: Tuple[str, ...] = ()
    object_mass: float = 0.0
    friction: Optional[FrictionSettings] = None
    tare_samples: int = 200
    tare_state: str = 'free'
    orientation_source: str = 'tf'
    object_pose_topic: str = 'object_pose'
    orientation_timeout_ns: int = 100_000_000


def analysis_settings(v: Mapping) -> AnalysisSettings:
    """Build the analysis engine's settings from validated analyzer parameters.

    :param v: the parameters.
    :return: the settings.
    """
    n = len(v['effectors'])
    return AnalysisSettings(
        max_future_ns=seconds_to_ns(v.get('max_future', 0.0)),
        gravity_frame=v.get('gravity_frame') or '',
        sensor_biases=tuple(v.get('sensor_biases') or ()),
        ft_frames=tuple(v.get('ft_frames') or [''] * n),
        sensor_frames=tuple(v.get('sensor_frames') or ()),
        object_mass=float(v.get('object_mass', 0.0)),
        friction=FrictionSettings.from_params(v, 'check'),
        tare_samples=int(v.get('tare_samples', 200)), tare_state=v.get('tare_state', 'free'),
        orientation_source=v.get('object_orientation_source', 'tf'),
        object_pose_topic=v.get('object_pose_topic', 'object_pose'),
        orientation_timeout_ns=seconds_to_ns(v.get('orientation_timeout', 0.1)))
