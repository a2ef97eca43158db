"""One typed, frozen configuration per node kind, built from the schema in one path (no ROS).

:class:`DistributorConfig` and :class:`AnalyzerConfig` are what the nodes, the engines, the bag
tools and the simulator read: the grasp (contacts, object, solver options), the topics, the
ROS plumbing and the engine's settings (:mod:`.settings`), each converted once (handles
parsed, limits expanded per effector, durations in nanoseconds, sensor models built).
:func:`build_config` makes one from validated parameters; a runtime change makes a new one
through the same path (:func:`changed_config`: the same checks and conversions as a file,
integers for doubles included) and the node swaps it in. The validated parameters a
configuration was built from stay inside it (``_values``), for this package's ``config``
modules only: the safety rules compare them and a change starts from them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Any, Mapping, Optional, Tuple

from wrench_distribution.core.codec import seconds_to_ns
from wrench_distribution.core.errors import InvalidInputError
from wrench_distribution.core.prescription import InternalLoadPrescription

from .arrays import per_effector
from .handles import check_handle_names, HANDLES, parse_handles
from .index import INDEX
from .schema import ConfigError
from .settings import (analysis_settings, AnalysisSettings, contact_friction_fields,
                       distribution_settings, DistributionSettings)
from .validation import validate_params

#: The prescription's two parameters: setting one clears the other (the latest wins).
PRESCRIPTION_PARAMS = ('internal_load', HANDLES)


@dataclass(frozen=True)
class RosSettings:
    """What a node's ROS plumbing reads.

    :param input_qos: ``input_qos``.
    :param output_qos: ``output_qos``.
    :param qos_depth: ``qos_depth``.
    :param diagnostics_period_ns: ``diagnostics_period``.
    :param summary_period_ns: ``summary_period``.
    :param watchdog_period_ns: 1 / ``watchdog_rate`` (the distributor; 0 for the analyzer).
    :param no_subscriber_grace_ns: ``no_subscriber_grace`` (the distributor; 0: no WARN).
    """

    input_qos: str
    output_qos: str
    qos_depth: int
    diagnostics_period_ns: int
    summary_period_ns: int
    watchdog_period_ns: int = 0
    no_subscriber_grace_ns: int = 0


@dataclass(frozen=True)
class DistributorTopics:
    """The distributor's topics (per-effector defaults resolved)."""

    desired_wrench: str
    contact_poses: str
    internal_load: str
    commands: Tuple[str, ...]
    feedback: str
    friction_feedback: str
    friction_load: str
    contact_weights: str
    actual_weights: str


@dataclass(frozen=True)
class AnalyzerTopics:
    """The analyzer's topics (per-effector defaults resolved; '' where an output is off)."""

    ft: Tuple[str, ...]
    manipulating: Tuple[str, ...]
    constraint: Tuple[str, ...]
    internal: Tuple[str, ...]
    invariant: Tuple[str, ...]
    internal_load_norm: str
    invariant_norm: str
    object_wrench: str
    internal_load: str
    contact_poses: str
    friction: str
    object_pose: str
    weights: str


@dataclass(frozen=True)
class CalibrationSettings:
    """The analyzer's calibration services.

    :param file: ``calibration_file`` ('': saving refused).
    :param mounting: ``calibration_mounting``.
    """

    file: str
    mounting: bool


@dataclass(frozen=True)
class _NodeConfig:
    """The grasp both nodes share, and what every node configuration carries."""

    kind: str
    effectors: Tuple[str, ...]
    contact_types: Tuple[str, ...]
    contact_source: str
    contact_frames: Tuple[str, ...]
    contacts: Optional[tuple]
    contact_extras: Tuple[dict, ...]
    object_frame: str
    object_model: Any
    options: Any
    contact_pose_tolerance: float
    contact_timeout_ns: int
    ros: RosSettings
    _values: Mapping[str, Any] = field(repr=False, compare=False)
    _given: AbstractSet[str] = field(repr=False, compare=False)

    def as_parameters(self) -> dict:
        """Return the parameters this configuration was built from, for a record (a copy).

        What ``ros2 param dump`` would show: written beside results (a bag's analysis) and read
        back by :func:`build_config`; nothing reads a setting from it.

        :return: name -> value, every parameter of the node.
        """
        return {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in self._values.items()}

    @property
    def given(self) -> AbstractSet[str]:
        """Return the names the user set (a file, the command line, a runtime change)."""
        return self._given


@dataclass(frozen=True)
class DistributorConfig(_NodeConfig):
    """The distributor's configuration (module docstring).

    :ivar topics: its topics.
    :ivar settings: what the distribution engine reads.
    :ivar command_frames: the frame id of each command (contact frames, or the object frame).
    """

    topics: DistributorTopics = None
    settings: DistributionSettings = None
    command_frames: Tuple[str, ...] = ()


@dataclass(frozen=True)
class AnalyzerConfig(_NodeConfig):
    """The analyzer's configuration (module docstring).

    :ivar topics: its topics.
    :ivar sensors: one core ``SensorModel`` per effector.
    :ivar gravity: gravity in the object frame (m/s^2), or in ``gravity_frame``.
    :ivar settings: what the analysis engine reads.
    :ivar calibration: the calibration services' settings.
    """

    topics: AnalyzerTopics = None
    sensors: tuple = ()
    gravity: Tuple[float, float, float] = (0.0, 0.0, -9.81)
    settings: AnalysisSettings = None
    calibration: CalibrationSettings = None


def static_contacts(v: Mapping) -> Optional[tuple]:
    """Build the core ``Contact`` of every effector from its static pose, type and friction.

    :param v: validated parameters holding ``effectors``, ``contact_types``,
        ``contact_positions``, ``contact_orientations`` and the friction parameters (a node's
        or the simulator's).
    :return: one ``Contact`` per effector, or None when no contact positions are set.
    """
    from wrench_distribution.core import Contact
    effectors = tuple(v['effectors'])
    n = len(effectors)
    if not v['contact_positions']:
        return None
    types = v['contact_types'] or ['rigid'] * n
    poses = zip(per_effector(v['contact_positions'], n, 3, ()),
                per_effector(v['contact_orientations'], n, 4, (0.0, 0.0, 0.0, 1.0)))
    return tuple(Contact(name=e, type=t, position=p, orientation=q, **x)
                 for e, t, (p, q), x in zip(effectors, types, poses, contact_friction_fields(v)))


def sensor_models(v: Mapping) -> tuple:
    """Build the core ``SensorModel`` of every effector (empty arrays: the defaults).

    :param v: validated parameters holding ``effectors``, ``sensor_positions``,
        ``sensor_orientations``, ``sensor_signs``, ``tool_masses`` and ``tool_coms`` (the
        analyzer's or the simulator's).
    :return: one ``SensorModel`` per effector.
    :raises ConfigError: when the core refuses a sensor (the message names the cause).
    """
    from wrench_distribution.core import SensorModel
    n = len(v['effectors'])
    try:
        return tuple(SensorModel(position=p, orientation=q, sign=s[0], tool_mass=m[0], tool_com=c)
                     for p, q, s, m, c in zip(
                         per_effector(v['sensor_positions'], n, 3, (0.0, 0.0, 0.0)),
                         per_effector(v['sensor_orientations'], n, 4, (0.0, 0.0, 0.0, 1.0)),
                         per_effector(v['sensor_signs'], n, 1, (1,)),
                         per_effector(v['tool_masses'], n, 1, (0.0,)),
                         per_effector(v['tool_coms'], n, 3, (0.0, 0.0, 0.0))))
    except InvalidInputError as e:
        raise ConfigError(f'invalid sensor configuration: {e}') from None


def _grasp(v: Mapping) -> dict:
    """Build the core objects and contact fields both nodes build the same way."""
    from wrench_distribution.core import DistributionOptions, ObjectModel
    effectors = tuple(v['effectors'])
    masses: Any = list(v['virtual_mass_values']) if v['virtual_masses'] == 'explicit' \
        else v['virtual_masses']
    return dict(  # noqa: C408 (the fields' names)
        effectors=effectors, contact_types=tuple(v['contact_types'] or ['rigid'] * len(effectors)),
        contact_source=v['contact_source'],
        contact_frames=tuple(v['contact_frames'] or [f'{e}_contact' for e in effectors]),
        contacts=static_contacts(v), contact_extras=contact_friction_fields(v),
        object_frame=v['object_frame'],
        object_model=ObjectModel(com=tuple(v['object_com']),
                                 mass=v['object_mass'] if v['object_mass'] > 0 else None,
                                 inertia=list(v['object_inertia']) or None),
        options=DistributionOptions(torque_share=v['torque_share'], virtual_masses=masses,
                                    torque_weights=list(v['torque_weights']) or None,
                                    basis_reference_axis=tuple(v['basis_reference_axis'])),
        contact_pose_tolerance=v['contact_pose_tolerance'],
        contact_timeout_ns=seconds_to_ns(v['contact_timeout']))


def _ros(v: Mapping) -> RosSettings:
    rate = v.get('watchdog_rate')
    return RosSettings(v['input_qos'], v['output_qos'], v['qos_depth'],
                       seconds_to_ns(v['diagnostics_period']), seconds_to_ns(v['summary_period']),
                       seconds_to_ns(1.0 / rate) if rate else 0,
                       seconds_to_ns(v.get('no_subscriber_grace', 0.0)))


def _topics(values, effectors, suffix: str) -> Tuple[str, ...]:
    return tuple(values) if values else tuple(f'{e}/{suffix}' for e in effectors)


def prescription_of(v: Mapping) -> InternalLoadPrescription:
    """Return the prescription of the distributor's parameters: the one parse of its handles.

    :param v: validated distributor parameters.
    :return: the prescription (none, coordinates or handles).
    :raises ConfigError: on a malformed handle, one naming no element of these effectors, or
        a value over ``internal_load_limit``.
    """
    handles = parse_handles(v[HANDLES])
    check_handle_names(handles, v['effectors'], v['contact_types'])
    big = [x for x in handles.values() if abs(x) > v['internal_load_limit']]
    if big:
        raise ConfigError(f"parameter '{HANDLES}': {big[0]:g} is over internal_load_limit="
                          f"{v['internal_load_limit']:g}; accepted: |value| <= the limit")
    if handles:
        return InternalLoadPrescription.of_handles(handles)
    if v['internal_load']:
        return InternalLoadPrescription.of_coordinates(v['internal_load'])
    return InternalLoadPrescription()


def _distributor(v: Mapping, given: AbstractSet[str]) -> DistributorConfig:
    from .safety import defaults_in_force
    grasp = _grasp(v)
    effectors = grasp['effectors']
    topics = DistributorTopics(
        v['desired_wrench_topic'], v['contact_poses_topic'], v['internal_load_topic'],
        _topics(v['command_topics'], effectors, 'wrench_command'), v['feedback_topic'],
        v['friction_feedback_topic'],
        v['friction_load_topic'] if v['friction_mode'] == 'auto' else '',
        v['contact_weights_topic'], v['actual_weights_topic'])
    settings = distribution_settings(v, prescription_of(v), defaults_in_force(v, given))
    frames = ((v['object_frame'],) * len(effectors) if settings.output.object_axes
              else grasp['contact_frames'])
    return DistributorConfig(kind='distributor', **grasp, ros=_ros(v), _values=v, _given=given,
                             topics=topics, settings=settings, command_frames=frames)


def _analyzer(v: Mapping, given: AbstractSet[str]) -> AnalyzerConfig:
    grasp = _grasp(v)
    effectors = grasp['effectors']
    topics = AnalyzerTopics(
        *(_topics(v[f'{part}_topics'], effectors, suffix) for part, suffix in (
            ('ft', 'ft_sensor'), ('manipulating', 'wrench_manipulating'),
            ('constraint', 'wrench_constraint'), ('internal', 'wrench_internal'),
            ('invariant', 'wrench_invariant'))),
        v['internal_load_norm_topic'], v['invariant_norm_topic'], v['object_wrench_topic'],
        v['internal_load_topic'], v['contact_poses_topic'], v['friction_topic'],
        v['object_pose_topic'], v['actual_weights_topic'])
    sensors = sensor_models(v)
    return AnalyzerConfig(kind='analyzer', **grasp, ros=_ros(v), _values=v, _given=given,
                          topics=topics, sensors=sensors, gravity=tuple(v['gravity']),
                          settings=analysis_settings(v),
                          calibration=CalibrationSettings(v['calibration_file'],
                                                          bool(v['calibration_mounting'])))


_BUILDERS = {'distributor': _distributor, 'analyzer': _analyzer}


def build_config(kind: str, values: Mapping[str, Any], given: AbstractSet[str] = frozenset()):
    """Build a node's configuration from validated parameters.

    :param kind: ``distributor`` or ``analyzer``.
    :param values: the parameters (:func:`~.validation.validate_params`, defaults filled in).
    :param given: the names the user set (the others are at their defaults).
    :return: :class:`DistributorConfig` or :class:`AnalyzerConfig`.
    :raises ConfigError: when a value cannot be converted (the message names the parameter).
    """
    try:
        return _BUILDERS[kind](dict(values), frozenset(given))
    except ConfigError:
        raise
    except InvalidInputError as e:  # the core refused an object built from the values
        raise ConfigError(f'invalid configuration: {e}') from None


def config_from_parameters(kind: str, params: Mapping[str, Any], strict_unknown: bool = True):
    """Validate a node's parameters (the names given) and build its configuration.

    :param kind: ``distributor`` or ``analyzer``.
    :param params: the parameters given (the others take their defaults).
    :param strict_unknown: refuse names the node does not declare.
    :return: the configuration.
    :raises ConfigError: naming the parameter and the accepted values.
    """
    values = validate_params(kind, params, strict_unknown=strict_unknown)
    return build_config(kind, values, frozenset(params) & frozenset(INDEX[kind]))


@dataclass(frozen=True)
class Change:
    """A runtime change, checked: the configuration it makes and what it touched.

    :param config: the new configuration (the node swaps it in once the change is applied).
    :param touched: the parameters the request set.
    :param less_safe: ``name: old -> new`` of the changes only ``allow_unsafe_runtime_changes``
        lets through (for a WARN).
    """

    config: Any
    touched: AbstractSet[str]
    less_safe: Tuple[str, ...] = ()

    @property
    def prescription_changed(self) -> bool:
        """Tell whether the request set ``internal_load`` or ``internal_load_handles``."""
        return bool(self.touched & set(PRESCRIPTION_PARAMS))


def changed_config(config, changes: Mapping[str, Any]) -> Change:
    """Check a runtime change and build the configuration it makes (the path of a file).

    Every value is checked as in a file (an integer for a double is that double); the
    prescription's latest setting wins (setting one of its two parameters clears the other);
    the distributor refuses a change that makes it less safe (:mod:`.safety`).

    :param config: the configuration in force.
    :param changes: name -> value asked.
    :return: the checked change.
    :raises ConfigError: on an unknown or read-only name, or a value the node refuses;
        :class:`~.safety.UnsafeChangeError` when it would make the node less safe.
    """
    from .safety import check_runtime_change, unsafe_changes_allowed
    from .validation import unknown_message
    kind, index = config.kind, INDEX[config.kind]
    for name in changes:
        if name not in index:
            raise ConfigError(unknown_message(kind, [name]))
        if index[name].read_only:
            raise ConfigError(f"parameter '{name}' is read-only: it is set at start-up only")
    values = dict(config._values, **changes)
    touched = frozenset(changes)
    if kind == 'distributor' and touched & set(PRESCRIPTION_PARAMS):
        for name in set(PRESCRIPTION_PARAMS) - touched:
            values[name] = []
    values = validate_params(kind, values)
    less_safe: Tuple[str, ...] = ()
    if kind == 'distributor':
        check_runtime_change(config._values, values, touched)
        less_safe = tuple(unsafe_changes_allowed(values, config._values, touched))
    return Change(build_config(kind, values, config._given | touched), touched, less_safe)
