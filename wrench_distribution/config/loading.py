"""Reading ROS parameter YAML files into the typed :class:`DistributorConfig` / :class:`AnalyzerConfig`.

Scripts without ROS (the bag tools) and the nodes build their core objects from here.
"""
from __future__ import annotations

from dataclasses import dataclass, field
import os
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .schema import ConfigError, default_of
from .settings import analysis_settings, AnalysisSettings, distribution_settings, DistributionSettings
from .validation import parse_handles, validate_params


# -- YAML files -------------------------------------------------------------------------
def read_param_document(path_or_dict: Any) -> Mapping:
    """Return a ROS parameter file as a mapping of node sections (bounded safe loading).

    :param path_or_dict: a file path, or the already-parsed YAML dict.
    :return: the mapping of node names to sections.
    :raises ConfigError: when the file cannot be read or parsed, or is not a mapping.
    """
    if isinstance(path_or_dict, Mapping):
        return path_or_dict
    from wrench_distribution.core.errors import InvalidInputError
    from wrench_distribution.core.safe_load import load_document
    try:  # size, depth, aliases, number magnitudes
        data = load_document(os.fspath(path_or_dict), 'parameter file')
    except InvalidInputError as e:
        raise ConfigError(str(e)) from None
    if not isinstance(data, Mapping):
        raise ConfigError('parameter file: expected a mapping of node names to '
                          '{ros__parameters: ...}')
    return data


def read_ros_params_yaml(path_or_dict: Any, node_name: str) -> dict:
    """Return the flattened ``ros__parameters`` of one node from a ROS parameter file.

    Sections keyed ``<node_name>``, ``/<node_name>``, ``<ns>/<node_name>`` and the
    wildcard ``/**`` are merged (the node's own section wins). Nested dicts are
    flattened with dots, like ROS does.

    :param path_or_dict: a file path, or the already-parsed YAML dict.
    :param node_name: node name, e.g. ``wrench_analyzer``.
    :return: ``{param_name: value}``.
    :raises ConfigError: when the file cannot be read or parsed, or has no section.
    """
    data = read_param_document(path_or_dict)
    merged: dict = {}
    found = False
    own = []
    for key, section in data.items():
        k = str(key)
        if k in ('/**', '**'):
            merged.update(_section(section, k))
            found = True
        elif k.lstrip('/').split('/')[-1] == node_name:
            own.append((k, section))
    for k, section in own:
        merged.update(_section(section, k))
        found = True
    if not found:
        raise ConfigError(f"parameter file: no section for node '{node_name}' (keys: "
                          f'{", ".join(map(str, data))}); expected "{node_name}:" or "/**:" '
                          'with "ros__parameters:"')
    return merged


def _section(section: Any, key: str) -> dict:
    if not isinstance(section, Mapping) or 'ros__parameters' not in section:
        raise ConfigError(f"parameter file: section '{key}' has no 'ros__parameters'")
    params = section['ros__parameters'] or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"parameter file: '{key}.ros__parameters' must be a mapping")
    out: dict = {}

    def flat(prefix: str, d: Mapping) -> None:
        for k, v in d.items():
            name = f'{prefix}{k}'
            if isinstance(v, Mapping):
                flat(name + '.', v)
            else:
                out[name] = v
    flat('', params)
    return out


# -- config objects -------------------------------------------------------------------
@dataclass
class _BaseConfig:
    params: dict
    effectors: list
    contact_types: list
    contact_source: str
    contact_frames: list
    contacts: Optional[list]
    object_frame: str
    object_model: Any
    options: Any
    topics: dict = field(default_factory=dict)
    contact_pose_tolerance: float = default_of('analyzer', 'contact_pose_tolerance')
    contact_timeout: float = default_of('analyzer', 'contact_timeout')


@dataclass
class DistributorConfig(_BaseConfig):
    """Validated distributor configuration.

    :ivar params: every parameter, validated and normalised (name -> value).
    :ivar effectors: effector names.
    :ivar contact_types: ``'rigid'`` / ``'point'`` per effector.
    :ivar contact_source: ``'topic'``, ``'static'`` or ``'tf'``.
    :ivar contact_frames: contact frame id per effector.
    :ivar contacts: list of core ``Contact`` from the static poses, or None when no
        static positions are configured.
    :ivar object_frame: object frame id.
    :ivar contact_pose_tolerance: contact motion (m, rad) below which a solver is reused.
    :ivar contact_timeout: age (s) beyond which contact poses are stale; 0 disables.
    :ivar object_model: core ``ObjectModel``.
    :ivar options: core ``DistributionOptions``.
    :ivar topics: ``{'desired_wrench', 'contact_poses', 'internal_load': str,
        'commands': [str per effector]}``.
    :ivar internal_load: prescribed lambda_c coordinates (list) or None.
    :ivar internal_load_handles: ``{handle name: value}`` (may be empty).
    :ivar settings: what the distribution engine reads (built from ``params``).
    """

    internal_load: Optional[list] = None
    internal_load_handles: dict = field(default_factory=dict)
    settings: DistributionSettings = field(init=False)

    def __post_init__(self) -> None:
        self.settings = distribution_settings(self.params)


@dataclass
class AnalyzerConfig(_BaseConfig):
    """Validated analyzer configuration (what the bag tools need).

    :ivar params: every parameter, validated and normalised (name -> value).
    :ivar effectors: effector names (order of every per-effector list).
    :ivar contact_types: ``'rigid'`` / ``'point'`` per effector.
    :ivar contact_source: ``'topic'``, ``'static'`` or ``'tf'``.
    :ivar contact_frames: contact frame id per effector.
    :ivar contacts: list of core ``Contact`` (static poses), or None when no static
        positions are configured.
    :ivar object_frame: object frame id.
    :ivar contact_pose_tolerance: contact motion (m, rad) below which a solver is reused.
    :ivar contact_timeout: age (s) beyond which contact poses are stale; 0 disables.
    :ivar object_model: core ``ObjectModel`` (com, mass or None, inertia or None).
    :ivar options: core ``DistributionOptions``.
    :ivar sensors: list of core ``SensorModel``, one per effector.
    :ivar gravity: gravity vector in the object frame, tuple of 3 floats (m/s^2).
    :ivar sync_tolerance: largest stamp skew inside one sample (s).
    :ivar max_age: staleness limit (s), 0 disables.
    :ivar topics: ``{'ft': [...], 'manipulating': [...], 'constraint': [...]`` (one per
        effector), ``'object_wrench': str, 'internal_load': str, 'contact_poses': str}``.
    :ivar output_frame: ``'contact'`` or ``'object'``.
    :ivar settings: the rest the analysis engine reads (built from ``params``).
    """

    sensors: list = field(default_factory=list)
    gravity: tuple = (0.0, 0.0, -9.81)
    sync_tolerance: float = 0.005
    max_age: float = 0.5
    output_frame: str = 'contact'
    settings: AnalysisSettings = field(init=False)

    def __post_init__(self) -> None:
        self.settings = analysis_settings(self.params)


def _group(xs: Sequence[float], width: int) -> list:
    return [tuple(xs[i:i + width]) for i in range(0, len(xs), width)]


def per_effector(values: Sequence[float], n: int, width: int, default: Sequence[float]):
    """Return a per-effector array parameter as rows, the default in every row where it is empty.

    The one reading of the flat ``[x, y, z per effector]`` form (contact poses, errors,
    biases, tool centres of mass, arm bases) as an array.

    :param values: the parameter's flat list (empty: the default for every effector).
    :param n: number of effectors.
    :param width: numbers per effector.
    :param default: the ``width`` numbers of an effector when the list is empty.
    :return: ``numpy`` array (n, width).
    :raises ValueError: when the list holds neither 0 nor ``n * width`` numbers.
    """
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        return np.tile(np.asarray(default, dtype=float), (n, 1))
    if v.size != n * width:
        raise ValueError(f'expected {width} numbers per effector ({n * width}), got {v.size}')
    return v.reshape(n, width)


def _per_eff_topics(values: Sequence[str], effs: Sequence[str], suffix: str) -> list:
    return list(values) if values else [f'{e}/{suffix}' for e in effs]


def contact_friction_fields(v: dict) -> list:
    """Build the per-effector ``Contact`` keyword arguments of the friction parameters.

    From ``friction_coefficients`` and ``contact_normals`` (0 or empty: no friction; empty
    normals: +z).

    :param v: validated parameters.
    :return: one ``{'friction': mu or None, 'normal': (x, y, z)}`` per effector.
    """
    n = len(v['effectors'])
    mu = list(v.get('friction_coefficients') or [0.0] * n)
    normals = _group(v.get('contact_normals') or [0.0, 0.0, 1.0] * n, 3)
    return [{'friction': float(m) if m > 0 else None, 'normal': tuple(nv)}
            for m, nv in zip(mu, normals)]


def contacts_from(v: dict) -> Optional[list]:
    """Build the core ``Contact`` of every effector from its static pose and friction.

    :param v: validated parameters holding ``effectors``, ``contact_types``,
        ``contact_positions``, ``contact_orientations`` and the friction parameters (the
        distributor's, the analyzer's or the simulator's).
    :return: list of ``Contact``, or None when no contact positions are configured.
    """
    from wrench_distribution.core import Contact
    effs = v['effectors']
    n = len(effs)
    if not v['contact_positions']:
        return None
    types = v['contact_types'] or ['rigid'] * n
    pos = _group(v['contact_positions'], 3)
    ori = _group(v['contact_orientations'], 4) or [(0.0, 0.0, 0.0, 1.0)] * n
    extras = contact_friction_fields(v)
    return [Contact(name=e, type=t, position=p, orientation=q, **x)
            for e, t, p, q, x in zip(effs, types, pos, ori, extras)]


def sensor_models_from(v: dict) -> list:
    """Build the core ``SensorModel`` of every effector from the sensor parameters.

    :param v: validated parameters holding ``effectors``, ``sensor_positions``,
        ``sensor_orientations``, ``sensor_signs``, ``tool_masses`` and ``tool_coms`` (the
        analyzer's or the simulator's); empty arrays mean the defaults.
    :return: one ``SensorModel`` per effector.
    :raises ConfigError: when the core refuses a sensor (the message names the cause).
    """
    from wrench_distribution.core import SensorModel
    n = len(v['effectors'])
    pos = _group(v['sensor_positions'], 3) or [(0.0, 0.0, 0.0)] * n
    ori = _group(v['sensor_orientations'], 4) or [(0.0, 0.0, 0.0, 1.0)] * n
    signs = v['sensor_signs'] or [1] * n
    masses = v['tool_masses'] or [0.0] * n
    coms = _group(v['tool_coms'], 3) or [(0.0, 0.0, 0.0)] * n
    try:
        return [SensorModel(position=p, orientation=q, sign=s, tool_mass=m, tool_com=c)
                for p, q, s, m, c in zip(pos, ori, signs, masses, coms)]
    except ValueError as e:  # core InvalidInputError
        raise ConfigError(f'invalid sensor configuration: {e}') from None


def build_core_objects(v: dict) -> tuple:
    """Build core ``Contact`` list (or None), ``ObjectModel`` and ``DistributionOptions``.

    :param v: validated parameters (:func:`validate_params`).
    :return: ``(contacts or None, object_model, options)``.
    """
    from wrench_distribution.core import DistributionOptions, ObjectModel
    contacts = contacts_from(v)
    inertia = list(v['object_inertia']) or None  # the core's inertia_matrix reads its forms
    obj = ObjectModel(com=tuple(v['object_com']),
                      mass=v['object_mass'] if v['object_mass'] > 0 else None,
                      inertia=inertia)
    vm: Any = v['virtual_masses']
    if vm == 'explicit':
        vm = list(v['virtual_mass_values'])
    opts = DistributionOptions(torque_share=v['torque_share'], virtual_masses=vm,
                               torque_weights=list(v['torque_weights']) or None,
                               basis_reference_axis=tuple(v['basis_reference_axis']))
    return contacts, obj, opts


def _base_fields(v: dict) -> dict:
    effs = v['effectors']
    try:
        contacts, obj, opts = build_core_objects(v)
    except ConfigError:
        raise
    except ValueError as e:  # core InvalidInputError
        raise ConfigError(f'invalid configuration: {e}') from None
    return dict(params=v, effectors=list(effs),  # noqa: C408 (keyword names of the config)
                contact_types=list(v['contact_types'] or ['rigid'] * len(effs)),
                contact_source=v['contact_source'],
                contact_frames=list(v['contact_frames'] or [f'{e}_contact' for e in effs]),
                contacts=contacts, object_frame=v['object_frame'], object_model=obj,
                options=opts, contact_pose_tolerance=v['contact_pose_tolerance'],
                contact_timeout=v['contact_timeout'])


def load_distributor_config(path_or_dict: Any, node_name: str = 'wrench_distributor',
                            strict_unknown: bool = True) -> DistributorConfig:
    """Read and validate the distributor section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the distributor does not declare.
    :return: :class:`DistributorConfig`.
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    v = validate_params('distributor', _params_of(path_or_dict, node_name),
                        strict_unknown=strict_unknown)
    f = _base_fields(v)
    f['topics'] = {'desired_wrench': v['desired_wrench_topic'],
                   'contact_poses': v['contact_poses_topic'],
                   'internal_load': v['internal_load_topic'],
                   'commands': _per_eff_topics(v['command_topics'], v['effectors'],
                                               'wrench_command')}
    return DistributorConfig(**f, internal_load=list(v['internal_load']) or None,
                             internal_load_handles=parse_handles(v['internal_load_handles']))


def load_analyzer_config(path_or_dict: Any, node_name: str = 'wrench_analyzer',
                         strict_unknown: bool = True) -> AnalyzerConfig:
    """Read and validate the analyzer section of a ROS parameter YAML file.

    :param path_or_dict: file path, or parsed YAML (``{node: {ros__parameters: {...}}}``),
        or directly a flat ``{param: value}`` dict.
    :param node_name: node section to read (``/**`` is merged in too).
    :param strict_unknown: raise on parameters the analyzer does not declare.
    :return: :class:`AnalyzerConfig` (``contacts`` is None unless static contact
        positions are configured; ``sensors`` has one ``SensorModel`` per effector).
    :raises ConfigError: on any invalid or unknown parameter (message names it).
    """
    v = validate_params('analyzer', _params_of(path_or_dict, node_name),
                        strict_unknown=strict_unknown)
    effs = v['effectors']
    f = _base_fields(v)
    f['topics'] = {'ft': _per_eff_topics(v['ft_topics'], effs, 'ft_sensor'),
                   'manipulating': _per_eff_topics(v['manipulating_topics'], effs,
                                                   'wrench_manipulating'),
                   'constraint': _per_eff_topics(v['constraint_topics'], effs,
                                                 'wrench_constraint'),
                   'internal': _per_eff_topics(v['internal_topics'], effs, 'wrench_internal'),
                   'invariant': _per_eff_topics(v['invariant_topics'], effs, 'wrench_invariant'),
                   'internal_load_norm': v['internal_load_norm_topic'],
                   'invariant_norm': v['invariant_norm_topic'],
                   'object_wrench': v['object_wrench_topic'],
                   'internal_load': v['internal_load_topic'],
                   'contact_poses': v['contact_poses_topic']}
    return AnalyzerConfig(**f, sensors=sensor_models_from(v), gravity=tuple(v['gravity']),
                          sync_tolerance=v['sync_tolerance'], max_age=v['max_age'],
                          output_frame=v['output_frame'])


def _params_of(path_or_dict: Any, node_name: str) -> dict:
    if isinstance(path_or_dict, Mapping) and not any(
            isinstance(s, Mapping) and 'ros__parameters' in s for s in path_or_dict.values()):
        return dict(path_or_dict)  # already flat parameters
    return read_ros_params_yaml(path_or_dict, node_name)
