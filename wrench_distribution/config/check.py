"""One configuration, checked as a whole: the distributor and analyzer sections together (no ROS).

What is commanded is what is read back only when both nodes agree on the grasp. Each
section is judged on its own first (:func:`~.judge.judge_document`: every rule of the nodes
and of rcl's parser, with the fix); then :func:`config_findings` compares the two nodes'
sections and returns every disagreement, one
:class:`Finding` each: effectors (names, order), frames (object frame, contact frames),
contacts (source, topic, static poses, types), the object model and solver options (the
basis the prescription and the read-out share), signs (the command against the sensor),
topics (an output of one node on an input of the other) and tool masses (against a
controller's gravity compensation in the same file).

Signs: the force controllers this package is wired to (ros2_controllers
``admittance_controller`` ``~/wrench_reference``, FZI ``cartesian_force_controller``
``target_wrench``) add the command to the measured wrench, so a command acts like a sensor
reading: ``command_sign`` must be ``-sensor_signs[i]`` for every effector. Where an
``object_sim`` section in the same file consumes the commands (the simulator applies them
as the wrenches on the object), ``command_sign`` must be +1.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional, Sequence

from wrench_distribution.core.codec import same_frame
from wrench_distribution.core.spatial import same_rotation
from wrench_distribution.ros_args import param_files, unreadable_param_file

from .arrays import per_effector
from .calibration import CALIBRATION_KEYS, document_problems, merged
from .cross_checks import cross_check_errors
from .findings import Finding, Judgement, Problem
from .index import NODE_KINDS
from .judge import judge_document, parameter_of
from .loading import node_of, read_param_document, read_ros_params_yaml
from .schema import ConfigError, PARAM_INDEX
from .validation import validate_params
from .values import check_param_value

DISTRIBUTOR = 'wrench_distributor'
ANALYZER = 'wrench_analyzer'
#: A controller's tool centre of mass further than this (m, per axis) from the analyzer's differs.
COM_TOLERANCE = 1e-3

#: parameters of the object model and solver options both nodes must share
_SHARED = ('object_com', 'object_mass', 'object_inertia', 'torque_share', 'virtual_masses',
           'torque_weights', 'basis_reference_axis', 'friction_coefficients',
           'contact_normals')


def _per_effector(v: dict, name: str, width: int, default: Sequence) -> dict:
    """Per-effector groups of a flat array parameter, by effector name."""
    names = v['effectors']
    return dict(zip(names, per_effector(v[name], len(names), width, default)))


def _close(a: Sequence[float], b: Sequence[float], tolerance: float = 1e-9) -> bool:
    return len(a) == len(b) and all(math.isclose(x, y, rel_tol=tolerance, abs_tol=tolerance)
                                    for x, y in zip(a, b))


def _same_rotation(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether two quaternions (any norm) are the same rotation (q and -q are)."""
    return bool(same_rotation(a, b, 1e-6))


def _differing(d: dict, a: dict, name: str, width: int, default: Sequence, same) -> list:
    """Effectors whose ``name`` groups differ: ``[(effector, distributor, analyzer)]``."""
    dv, av = _per_effector(d, name, width, default), _per_effector(a, name, width, default)
    return [(e, list(dv[e]), list(av[e])) for e in d['effectors'] if not same(dv[e], av[e])]


def _effector_findings(d: dict, a: dict) -> list:
    de, ae = list(d['effectors']), list(a['effectors'])
    if set(de) != set(ae):
        return [Finding('effectors', 'effectors', 'the nodes name different effectors; no '
                        'other comparison is possible', de, ae)]
    if de != ae:
        return [Finding('effectors', 'effectors', 'same effectors in another order: every '
                        'per-effector array and the basis order differ between the nodes', de, ae)]
    return []


def _frame_findings(d: dict, a: dict) -> list:
    out = []
    if not same_frame(d['object_frame'], a['object_frame']):
        out.append(Finding('frames', 'object_frame', 'the object frames differ',
                           d['object_frame'], a['object_frame']))
    defaults = {e: f'{e}_contact' for e in d['effectors']}
    df = dict(zip(d['effectors'], d['contact_frames'])) if d['contact_frames'] else defaults
    af = dict(zip(a['effectors'], a['contact_frames'])) if a['contact_frames'] else defaults
    bad = [e for e in d['effectors'] if not same_frame(df[e], af[e])]
    if bad:
        out.append(Finding('frames', 'contact_frames', 'contact frames differ for '
                           + ', '.join(bad), [df[e] for e in bad], [af[e] for e in bad]))
    return out


def _contact_findings(d: dict, a: dict) -> list:
    out = []
    bad = _differing(d, a, 'contact_types', 1, ('rigid',), lambda x, y: x == y)
    if bad:
        out.append(Finding('contacts', 'contact_types', 'contact types differ for '
                           + ', '.join(e for e, _, _ in bad),
                           [x[1][0] for x in bad], [x[2][0] for x in bad]))
    if d['contact_source'] != a['contact_source']:
        return out + [Finding('contacts', 'contact_source', 'the nodes take the contact poses '
                              'from different sources: the read-out uses other poses than the '
                              'distribution', d['contact_source'], a['contact_source'])]
    if d['contact_source'] == 'topic' and d['contact_poses_topic'] != a['contact_poses_topic']:
        out.append(Finding('contacts', 'contact_poses_topic', 'the contact poses come from '
                           'different topics', d['contact_poses_topic'], a['contact_poses_topic']))
    if d['contact_source'] == 'static':
        for name, width, default, same in (
                ('contact_positions', 3, (0.0,) * 3, _close),
                ('contact_orientations', 4, (0.0, 0.0, 0.0, 1.0), _same_rotation)):
            bad = _differing(d, a, name, width, default, same)
            if bad:
                out.append(Finding('contacts', name, 'static contact poses differ for '
                                   + ', '.join(e for e, _, _ in bad),
                                   [x[1] for x in bad], [x[2] for x in bad]))
    return out


def _object_findings(d: dict, a: dict) -> list:
    out = []
    for name in _SHARED:
        dv, av = d[name], a[name]
        same = _close(dv, av) if isinstance(dv, list) else (
            math.isclose(dv, av, abs_tol=1e-12) if isinstance(dv, float) else dv == av)
        if not same:
            out.append(Finding('object', name, 'the object model or solver options differ: '
                               'the read-out decomposes in another basis than the prescription',
                               dv, av))
    if d['virtual_masses'] == a['virtual_masses'] == 'explicit' and not _close(
            d['virtual_mass_values'], a['virtual_mass_values']):
        out.append(Finding('object', 'virtual_mass_values', 'explicit virtual masses differ',
                           d['virtual_mass_values'], a['virtual_mass_values']))
    return out


def _gravity_findings(d: dict, a: dict) -> list:
    """Gravity of the two nodes when the distributor holds the object's weight.

    The distributor adds ``-m g`` with its ``gravity`` (or ``gravity_frame``); the analyzer
    removes the tools' weight with its own. Two gravities mean that the held weight and the
    tools' weight disagree by the difference.
    """
    if not d.get('hold_object_weight'):
        return []
    out = []
    if not same_frame(d['gravity_frame'], a['gravity_frame']):
        out.append(Finding('gravity', 'gravity_frame', 'hold_object_weight takes gravity from '
                           'another frame than the analyzer', d['gravity_frame'], a['gravity_frame']))
    elif not d['gravity_frame'] and not _close(d['gravity'], a['gravity'], 1e-6):
        out.append(Finding('gravity', 'gravity', 'hold_object_weight holds another gravity than '
                           'the analyzer removes from the tools', d['gravity'], a['gravity']))
    return out


def _sign_findings(d: dict, a: dict, simulated: bool) -> list:
    signs = _per_effector(a, 'sensor_signs', 1, (1,))
    want = {e: 1 if simulated else -signs[e][0] for e in d['effectors']}
    bad = [e for e in d['effectors'] if d['command_sign'] != want[e]]
    if not bad:
        return []
    why = ('the simulator (object_sim) applies the commands as the wrenches on the object: '
           'command_sign must be 1' if simulated else
           'the force controller adds the command to the measured wrench, so the command must '
           'have the sign of a reading: command_sign = -sensor_signs (else the arms pull '
           'instead of squeezing)')
    return [Finding('signs', 'command_sign/sensor_signs', f'{why}; wrong for '
                    + ', '.join(bad), d['command_sign'], [signs[e][0] for e in bad])]


def _topic_findings(d: dict, a: dict) -> list:
    out = []
    if _resolved(d['internal_load_topic']) == _resolved(a['internal_load_topic']):
        out.append(Finding('topics', 'internal_load_topic', "the analyzer's measured internal "
                           "load would be the distributor's prescription input",
                           d['internal_load_topic'], a['internal_load_topic']))
    effs = d['effectors']
    commands = [_resolved(t) for t in (d['command_topics'] or [f'{e}/wrench_command' for e in effs])]
    sensors = [_resolved(t) for t in (a['ft_topics'] or [f'{e}/ft_sensor' for e in effs])]
    both = sorted(set(commands) & set(sensors))
    if both:
        out.append(Finding('topics', 'command_topics/ft_topics', 'commands published on F/T '
                           'sensor topics: ' + ', '.join(both), d['command_topics'],
                           a['ft_topics']))
    return out


def _resolved(topic: str) -> str:
    return topic.lstrip('/')


def _controller_of(topics: Sequence[str], i: int, controllers: Mapping[str, dict]) -> tuple:
    """``(name, section)`` of the controller whose topic is ``topics[i]`` (its first name), or ``('', {})``."""
    if i >= len(topics):
        return '', {}
    name = topics[i].strip('/').split('/')[0]
    return name, controllers.get(name) or {}


def _frames_of(d: dict, a: dict) -> tuple:
    """Per effector: the frame its command is in, and the frame its sensor reads in."""
    effs = d['effectors']
    contact = per_effector(d['contact_frames'], len(effs), 1, ('',))
    commands = [d['object_frame'] if d['command_frame'] == 'object' else (c[0] or f'{e}_contact')
                for e, c in zip(effs, contact)]
    sensing = [s[0] or (c[0] or f'{e}_contact') for e, s, c in zip(
        effs, per_effector(a['sensor_frames'], len(effs), 1, ('',)),
        per_effector(a['contact_frames'], len(effs), 1, ('',)))]
    return commands, sensing


def _differs(controller: str, key: str, section: dict, want: str, why: str) -> list:
    given = section.get(key)
    if not isinstance(given, str) or same_frame(given, want):
        return []
    return [Finding('frames', f'{controller}.{key}', f"is '{given}', the nodes use '{want}': {why}",
                    want, given)]


def _controller_findings(d: dict, a: dict, controllers: Mapping[str, dict]) -> list:
    """Compare the arm controllers and F/T broadcasters of the same file with the nodes (docs/real_cell.md).

    The controller of an effector is the first name of its command topic, its broadcaster the
    first name of its F/T topic: ``admittance_controller`` (``ft_sensor.frame.id``,
    ``gravity_compensation.{frame.id, CoG.pos, CoG.force}``), FZI's
    ``cartesian_force_controller`` (``end_effector_link``, ``ft_sensor_ref_link``, ``tool.mass``),
    ``force_torque_sensor_broadcaster`` (``frame_id``).
    """
    out = []
    commands, sensing = _frames_of(d, a)
    for i, e in enumerate(d['effectors']):
        name, section = _controller_of(d['command_topics'], i, controllers)
        out += _differs(name, 'ft_sensor.frame.id', section, commands[i],
                        'the controller drops a wrench reference stamped in another frame')
        out += _differs(name, 'end_effector_link', section, commands[i],
                        'the controller reads the command in end_effector_link axes about its origin')
        out += _differs(name, 'gravity_compensation.frame.id', section, sensing[i],
                        "the controller's tool model must be in the sensor frame the analyzer's is")
        out += _differs(name, 'ft_sensor_ref_link', section, sensing[i],
                        'the controller reads the sensor in this frame')
        out += _tool_findings(e, name, section, a, i)
        broadcaster, section = _controller_of(a['ft_topics'], i, controllers)
        out += _differs(broadcaster, 'frame_id', section, sensing[i],
                        'the analyzer reads this sensor in another frame')
    return out


def _tool_findings(effector: str, name: str, section: dict, a: dict, i: int) -> list:
    """Compare a controller's gravity compensation with the analyzer's tool of one effector.

    ``admittance_controller``: ``gravity_compensation.CoG.force`` (the weight, N) and ``.pos``;
    FZI ``cartesian_force_controller``: ``tool.mass`` (kg) and ``tool.com``.
    """
    n = len(a['effectors'])
    mass = per_effector(a['tool_masses'], n, 1, (0.0,))[i][0]
    com = list(per_effector(a['tool_coms'], n, 3, (0.0, 0.0, 0.0))[i])
    g = math.sqrt(sum(x * x for x in a['gravity']))
    out = []
    force = section.get('gravity_compensation.CoG.force')  # admittance_controller (N)
    if force is None and 'tool.mass' in section:  # FZI cartesian controllers (kg)
        force = _weight_of(section['tool.mass'], g)
    weight = _weight_of(force, 1.0)
    if weight is not None and not math.isclose(weight, mass * g, rel_tol=0.02, abs_tol=1e-6):
        out.append(Finding('tools', f'tool_masses ({effector}) / {name}.gravity_compensation',
                           f'the controller compensates a tool weight of {weight:.4g} N, '
                           f'the analyzer {mass * g:.4g} N', force, mass))
    for key in ('gravity_compensation.CoG.pos', 'tool.com'):
        given = section.get(key)
        if isinstance(given, list) and len(given) == 3 and _weight_of(given, 1.0) is not None \
                and max(abs(float(x) - c) for x, c in zip(given, com)) > COM_TOLERANCE:
            out.append(Finding('tools', f'tool_coms ({effector}) / {name}.{key}',
                               f"the controller's tool centre of mass is {given}, the analyzer's "
                               f'{com} (m, sensor frame)', given, com))
    return out


def _weight_of(value: Any, scale: float) -> Optional[float]:
    """Return the size of a weight given as one number (Jazzy's ``CoG.force``, N) or a vector.

    :param value: a number, a list of numbers, or anything else (then None).
    :param scale: factor applied (g for a mass).
    :return: the weight, or None.
    """
    parts = value if isinstance(value, list) else [value]
    if not parts or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                            and math.isfinite(x) for x in parts):
        return None
    return math.sqrt(sum(float(x) ** 2 for x in parts)) * scale


def config_findings(distributor: dict, analyzer: dict, simulated: bool = False,
                    controllers: Optional[Mapping[str, dict]] = None) -> list:
    """Every disagreement between validated distributor and analyzer parameters.

    :param distributor: the distributor's parameters (:func:`validate_params`).
    :param analyzer: the analyzer's parameters (:func:`validate_params`).
    :param simulated: the commands go to the simulator (``object_sim``), not a controller.
    :param controllers: other sections of the file (name -> flat parameters).
    :return: the findings, in concern order (empty: the sections agree).
    """
    out = _effector_findings(distributor, analyzer)
    if out and out[0].message.startswith('the nodes name different'):
        return out
    for check in (_frame_findings, _contact_findings, _object_findings, _gravity_findings,
                  _topic_findings):
        out += check(distributor, analyzer)
    out += _sign_findings(distributor, analyzer, simulated)
    out += _controller_findings(distributor, analyzer, controllers or {})
    return out


def nodes_of(data: Mapping) -> tuple:
    """Return the nodes a file is for: those of the two whose section it has (both when neither).

    A robot without foot sensors runs the distributor alone: a file with only its section is
    judged for it alone. A file with neither section (only ``/**``, or none) is for both.

    :param data: the parsed file.
    :return: a tuple of :data:`DISTRIBUTOR` and/or :data:`ANALYZER`.
    """
    present = tuple(n for n in (DISTRIBUTOR, ANALYZER) if any(node_of(k) == n for k in data))
    return present or (DISTRIBUTOR, ANALYZER)


def judge_file(path_or_dict: Any, nodes: Optional[Sequence[str]] = None,
               calibration: Any = None) -> tuple:
    """Judge every section of this package's nodes in a file, then compare the two nodes'.

    A file of calibration values only (what ``~/save_calibration`` and ``identify --out`` write)
    is judged as a calibration on its own (:func:`judge_calibration`); ``calibration`` judges
    one against the file's sections, as the nodes will load it.

    :param path_or_dict: a file path, or the parsed YAML.
    :param nodes: the nodes the file must configure (None: :func:`nodes_of`).
    :param calibration: a calibration file (path or parsed YAML) the nodes load after it, or None.
    :return: ``(judgement, findings)``: the :class:`~.findings.Judgement` (errors, warnings,
        ignored sections, the configurations built) and the disagreements between the
        distributor and the analyzer (compared only when both sections are free of errors).
    :raises ConfigError: the file cannot be read or parsed, or is not a mapping.
    """
    data = read_param_document(path_or_dict)
    if calibration is None and is_calibration(data):
        return judge_calibration(data), []
    judgement = judge_document(data, required=tuple(nodes or nodes_of(data)))
    if calibration is not None:
        judged = judge_calibration(read_param_document(calibration), judgement.values)
        judgement.problems += judged.problems
        judgement.values.update(judged.values)
    values = judgement.values
    findings = []
    if DISTRIBUTOR in values and ANALYZER in values:
        findings = config_findings(values[DISTRIBUTOR], values[ANALYZER],
                                   simulated='object_sim' in judgement.sections,
                                   controllers=judgement.controllers)
    return judgement, findings


def is_calibration(data: Mapping) -> bool:
    """Whether a parsed file is a calibration: calibration values in it, and no section naming effectors.

    Every node's configuration names its effectors; a calibration corrects them and never does.
    """
    every = set(CALIBRATION_KEYS['analyzer']) | set(CALIBRATION_KEYS['distributor'])
    sections = [section.get('ros__parameters') if isinstance(section, Mapping) else None for section in data.values()]
    sections = [p for p in sections if isinstance(p, Mapping)]
    return (any(set(p) & every for p in sections)
            and not any('effectors' in p for p in sections))


def judge_calibration(data: Mapping, configured: Optional[Mapping] = None) -> Judgement:
    """Judge a calibration as the nodes load it: calibration values only, each within its bounds.

    Alone, each section's values are judged by the schema's bounds, their per-effector widths
    against each other and the analyzer's against the default ``sensor_ranges``; with
    ``configured`` (node name -> its validated values), merged over them: the mounting rotations
    and grasp corrections against the configured poses, and every cross-check of the node.

    :param data: the parsed calibration file.
    :param configured: the configuration's validated sections, or None (judged alone).
    :return: the judgement (its ``values``: the merged sections that passed).
    """
    out = Judgement(problems=[Problem('error', section or 'file', parameter, message,
                                      'remove it: write calibration values only')
                              for section, parameter, message in document_problems(data)])
    for key, section in data.items():
        name = str(key).lstrip('/').split('/')[-1]
        params = section.get('ros__parameters') if isinstance(section, Mapping) else None
        every = set(CALIBRATION_KEYS['analyzer']) | set(CALIBRATION_KEYS['distributor'])
        params = {n: v for n, v in params.items() if n in every} if isinstance(params, Mapping) else {}
        if not params:
            continue  # reported above
        kind = NODE_KINDS.get(name) if NODE_KINDS.get(name) in CALIBRATION_KEYS else (
            'analyzer' if set(params) - set(CALIBRATION_KEYS['distributor']) else 'distributor')
        params = {n: v for n, v in params.items() if n in CALIBRATION_KEYS[kind]}
        out.sections[name] = kind
        against = '' if configured and name in configured else ' (judged alone: default sensor_ranges)'
        errors = _calibration_errors(kind, dict((configured or {}).get(name) or _alone(kind, params)), params)
        out.problems += [Problem('error', name, parameter_of(str(e)), str(e) + against) for e in errors]
        if not errors:
            out.values[name] = merged((configured or {}).get(name) or _alone(kind, params), params, kind)
    return out


def _calibration_errors(kind: str, base: dict, params: Mapping) -> list:
    """Every error of a calibration's values: each on its own, then merged over ``base`` (all cross-checks)."""
    values, errors = {}, []
    for name, value in params.items():
        try:
            values[name] = check_param_value(PARAM_INDEX[kind][name], value)
        except ConfigError as error:
            errors.append(error)
    if errors:
        return errors
    try:
        return cross_check_errors(kind, merged(base, values, kind))
    except ConfigError as error:
        return [error]


def _alone(kind: str, params: Mapping) -> dict:
    """Return the defaults a calibration alone is judged over: as many effectors as its widest value says."""
    widths = {'tool_masses': 1, 'tool_coms': 3, 'sensor_biases': 6, 'sensor_orientations': 4,
              'contact_positions': 3, 'contact_orientations': 4}
    counts = {len(params[n]) // w for n, w in widths.items() if isinstance(params.get(n), list)}
    n = max(counts | {2})
    return validate_params(kind, {'effectors': [f'effector_{i}' for i in range(n)]})


def check_file(path_or_dict: Any) -> list:
    """Validate both sections of a parameter file and compare them.

    :param path_or_dict: a file path, or the parsed YAML.
    :return: the findings.
    :raises ConfigError: the file cannot be read, lacks a section, or a section is invalid
        (the message lists every error).
    """
    judgement, findings = judge_file(path_or_dict)
    if judgement.errors:
        raise ConfigError('; '.join(p.text() for p in judgement.errors))
    return findings


def param_file_refusals(argv: Sequence[str]) -> list:
    """Refuse the parameter files of a command line before rcl reads them (process entry points).

    rcl parses every ``--params-file`` inside ``rclpy.init``, before any node exists, with no
    bound of its own: a file of tens of megabytes stalls the start for minutes, and an alias
    bomb or a value of 1e300 goes straight into the parameters. So each file is judged first:
    from ``stat`` (:func:`~wrench_distribution.ros_args.unreadable_param_file`: missing, not a
    regular file, over :data:`~wrench_distribution.ros_args.MAX_PARAM_FILE_BYTES`: refused
    unread), then its text by the bounded loader (:func:`~.loading.read_param_document`: depth,
    aliases, values, number magnitudes, the count of values).

    :param argv: the process arguments.
    :return: one line per refused file, naming it and the bound it breaks (empty: all accepted).
    """
    out = []
    for path in param_files(argv):
        unread = unreadable_param_file(path)
        if unread:
            out.append(unread)
            continue
        try:
            read_param_document(path)
        except ConfigError as error:
            out.append(f'{error} (refused before rcl reads it)')
    return out


def findings_of_param_files(argv: Sequence[str]) -> list:
    """Return the findings of each parameter file of a command line that has both sections.

    A file without both sections, or one that does not validate, gives nothing here (the
    node reports its own section's errors).

    :param argv: the process arguments.
    :return: ``[(path, findings)]`` for the files with findings.
    """
    out = []
    for path in param_files(argv):
        try:
            data = read_param_document(path)
            read_ros_params_yaml(data, DISTRIBUTOR)
            read_ros_params_yaml(data, ANALYZER)
            findings = check_file(data)
        except (ConfigError, OSError):
            continue
        if findings:
            out.append((path, findings))
    return out


def warn_findings(warn: Callable[[str], None], argv: Sequence[str]) -> int:
    """Report the findings of a node's parameter files, one warning each (nodes at start-up).

    :param warn: where to write a warning (``node.get_logger().warning``).
    :param argv: the process arguments (``sys.argv``).
    :return: the number of findings.
    """
    count = 0
    for path, findings in findings_of_param_files(argv):
        for finding in findings:
            warn(f'{path}: {finding.text()} (wrench-distribution check-config)')
            count += 1
    return count


def param_file_problems(argv: Sequence[str]) -> list:
    """Return what rcl's parser refuses or misreads in the parameter files of a command line.

    A node refuses such a file (rcl may have read part of a list and made parameters of the
    rest), as ``check-config`` reports it (:func:`~.rcl.refused_lists`).

    :param argv: the process arguments.
    :return: ``path: parameter: message`` per problem (unreadable files are the node's own
        reader's to report).
    """
    from .rcl import refused_lists
    out = []
    for path in param_files(argv):
        try:
            data = read_param_document(path)
        except ConfigError:
            continue
        out += [f'{path}: {where}: {message}; {fix}' for where, message, fix in refused_lists(data)]
    return out
