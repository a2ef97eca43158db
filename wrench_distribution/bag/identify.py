"""``identify`` and ``check-signs``: calibration and sign check from a bag, offline.

``wrench-distribution identify BAG --config PARAMS.yaml --out calibration.yaml`` reads the F/T
streams and the poses as ``analyze-bag`` does (the same engine, the same pose sources), finds
the samples at rest, identifies each sensor's bias and tool (``--free``, default: the whole
bag) and the held object (``--held``), prints a table with 1-sigma and the poses used, and
writes a parameter fragment that ``--params-file`` loads beside the user's file.
``check-signs`` says each sensor's sign from the weight it carries (the object held at rest).
Errors: one ``error: ...`` line on stderr, exit status 2.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from .errors import BagError
from ..core.codec import ns_to_seconds, seconds_to_ns
from ..core.errors import WrenchDistributionError


def add_identify_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``identify``."""
    _common(parser)
    parser.add_argument('--out', type=Path, required=True,
                        help='parameter fragment to write (YAML), loaded with --params-file')
    parser.add_argument('--free', metavar='START:END', default=None,
                        help='window (s from the first F/T stamp; @START:@END absolute) in which the '
                             'tools are free, moved through poses: identifies biases and tools '
                             '(default: the whole bag, unless --held is given alone)')
    parser.add_argument('--held', metavar='START:END', default=None,
                        help='window in which the object is held at rest in several orientations: '
                             'identifies its mass and centre of mass')
    parser.add_argument('--mounting', action='store_true',
                        help="also identify each sensor's mounting rotation (writes sensor_orientations)")


def add_signs_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the options of ``check-signs``."""
    _common(parser)
    parser.add_argument('--held', metavar='START:END', default=None,
                        help='window in which the object is held at rest (default: the whole bag)')


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('bag', type=Path, help='rosbag2 bag directory (sqlite3 or mcap)')
    parser.add_argument('--config', type=Path, required=True, help='parameter file of the analyzer node')
    parser.add_argument('--node-name', default='wrench_analyzer', help='node section (default: %(default)s)')
    parser.add_argument('--namespace', default='/', help='namespace the analyzer ran in (default: %(default)s)')
    parser.add_argument('--json', action='store_true', help='print JSON instead of a table')


def record_bag(bag_path: Path, config: Any, namespace: str = '/', node: str = 'wrench_analyzer'):
    """Every analysed sample of a bag, as a calibration :class:`~..engine.calibration.Recording`.

    :raises BagError: on a bag that cannot give the samples (named).
    """
    from wrench_distribution.engine import AnalysisEngine
    from wrench_distribution.engine.calibration import CalibrationRecorder
    from .pipeline import _ft_topics, Options, orientation_source, pose_sources
    from .reader import BagReader
    options = Options(namespace=namespace, node_name=node)
    with BagReader(bag_path) as bag:
        topics, _ = _ft_topics(bag, bag_path, config, options)
        poses, sensor_poses = pose_sources(bag, config, config.contact_source, namespace, node)
        engine = AnalysisEngine(config, poses, sensor_poses, orientation=orientation_source(
            bag, config, namespace, node))
        engine.set_recorder(CalibrationRecorder())
        frames = config.settings.ft_frames if any(config.settings.ft_frames) else None
        for chunk in bag.wrench_chunks(topics, options.chunk, frames):
            engine.push_chunk(*chunk)
            if engine.recorder.full:
                raise BagError(f'{bag_path} holds more than {engine.recorder.limit} samples: a calibration '
                               'is a recording of a few minutes; cut the bag (ros2 bag convert)')
        engine.finish()
        completeness = bag.completeness()
    if not completeness['complete']:
        from .pipeline import incomplete_message
        raise BagError(incomplete_message(Path(bag_path), completeness).split('; nothing was')[0])
    if not len(engine.recorder):
        raise BagError(f'no synchronised sample with poses in {bag_path}'
                       + (f' ({engine.contact_problem})' if engine.contact_problem else ''))
    return engine.recorder.recording()


def _window(recording, text, option: str) -> np.ndarray:
    from .command import parse_tare
    if text is None:
        return np.ones(len(recording.stamps_ns), bool)
    try:
        start, stop, absolute = parse_tare(text)
    except ValueError as err:
        raise BagError(str(err).replace('--tare', option)) from None
    origin = 0 if absolute else int(recording.stamps_ns.min())
    stamps = recording.stamps_ns
    return (stamps >= origin + seconds_to_ns(start)) & (stamps <= origin + seconds_to_ns(stop))


def _rests(recording, mask: np.ndarray, masses, levers, what: str):
    """Rests of the window ``mask`` (:func:`~..engine.rests.find_rests`); labels over the whole recording.

    :return: ``(labels (k,), rests of the window)``.
    :raises BagError: when the window holds no rest.
    """
    from wrench_distribution.engine.rests import find_rests
    window = recording.take(mask)
    rests = find_rests(window, masses, levers)
    labels = np.full(len(mask), -1)
    labels[mask] = rests.labels
    if not (labels >= 0).any():
        raise BagError(f'no static segment {what}: the poses or the readings never stay still for 0.5 s '
                       f'(tilt rate <= {rests.omega_max:.3g} rad/s and acceleration <= {rests.alpha_max:.3g} '
                       'rad/s^2, readings steady: hold each pose still for a second or more)')
    return labels, rests


def _rests_report(recording, mask: np.ndarray, rests) -> dict:
    """Return the thresholds, the samples per fate, and the spans dropped (``from_s``, ``to_s``, ``why``)."""
    origin = int(recording.stamps_ns.min())
    spans = rests.spans(recording.stamps_ns[mask], origin)
    return {'still_below': {'tilt_rate_rad_s': rests.omega_max, 'tilt_acceleration_rad_s2': rests.alpha_max,
                            'from': rests.basis},
            'settle_s': rests.settle_s, 'samples': rests.counts(),
            'dropped': [{k: v for k, v in span.items() if k != 'rest'} for span in spans if span['why'] != 'kept']}


def _carried(recording, mask: np.ndarray, sensors, object_mass: float) -> tuple:
    from wrench_distribution.engine.rests import carried
    return carried(sensors, recording.poses[np.flatnonzero(mask)[0]] if mask.any() else recording.poses[0],
                   object_mass)


def _poses_table(recording, labels: np.ndarray, frame: str) -> list:
    origin = int(recording.stamps_ns.min())
    rows = []
    for label in np.unique(labels[labels >= 0]):
        index = np.flatnonzero(labels == label)
        g = recording.gravity[index].mean(axis=0)
        rows.append({'from_s': round(ns_to_seconds(recording.stamps_ns[index[0]] - origin), 3),
                     'to_s': round(ns_to_seconds(recording.stamps_ns[index[-1]] - origin), 3),
                     'samples': int(len(index)),
                     f'gravity_{frame}': [round(float(x), 3) for x in g / np.linalg.norm(g)]})
    return rows


def identify_document(args: argparse.Namespace, config: Any) -> tuple:
    """Run the identification of a bag; return ``(report, parameters)``.

    :raises BagError, WrenchDistributionError: on what the user has to fix.
    """
    from wrench_distribution.engine import calibration as E
    recording = record_bag(args.bag, config, args.namespace, args.node_name)
    names = list(config.effectors)
    report: dict = {'bag': str(args.bag)}
    tools = None
    if args.free or not args.held:
        mask = _window(recording, args.free, '--free')
        labels, rests = _rests(recording, mask, *_carried(recording, mask, config.sensors, 0.0),
                               'with the tools free')
        tools = E.identify_tools(recording, config.sensors, labels, names, args.mounting)
        report['tools'] = {name: _tool_row(t, args.mounting) for name, t in zip(names, tools)}
        report['tool_poses'] = _poses_table(recording, labels, 'object')
        report['tool_samples'] = _rests_report(recording, mask, rests)
    obj = None
    if args.held:
        obj, labels, rests = _held_object(args, config, recording, tools)
        report['object'] = {'mass': [obj.mass, obj.mass_sigma], 'com': [obj.com.tolist(), obj.com_sigma.tolist()],
                            'samples': obj.fit.samples, 'outliers': obj.fit.outliers,
                            'condition': obj.fit.condition, 'residual_scale': obj.fit.rms}
        report['object_poses'] = _poses_table(recording, labels, 'object')
        report['object_samples'] = _rests_report(recording, _window(recording, args.held, '--held'), rests)
    tf_sensors = bool(config.settings.sensor_frames)
    if args.mounting and tf_sensors:
        report['note'] = ('sensor_frames (tf) give the sensor orientations: the mounting rotations are '
                          'relative to those frames and are not written; correct the robot description')
    return report, E.calibration_parameters(tools, obj, args.mounting and not tf_sensors)


def _held_object(args: argparse.Namespace, config: Any, recording, tools) -> tuple:
    """Identify the held object in the ``--held`` window: ``(estimate, labels, rests)``.

    The rests' thresholds weigh the object: its configured mass, else a first estimate from the
    rests the tools' masses alone define.
    """
    from wrench_distribution.engine import calibration as E
    from wrench_distribution.engine.sensing import parse_biases
    mask = _window(recording, args.held, '--held')
    sensors = E.calibrated_sensors(config.sensors, tools)
    biases = (np.stack([t.bias for t in tools]) if tools is not None
              else parse_biases(config.settings.sensor_biases, len(config.effectors)))
    mass = float(config.settings.object_mass)
    for _ in range(1 if mass > 0 else 2):
        labels, rests = _rests(recording, mask, *_carried(recording, mask, sensors, mass),
                               'with the object held')
        obj = E.identify_held_object(recording, sensors, biases, labels, tools)
        mass = max(obj.mass, 0.0)
    return obj, labels, rests


def _tool_row(t, mounting: bool) -> dict:
    row = {'mass': [t.mass, t.mass_sigma], 'com': [t.com.tolist(), t.com_sigma.tolist()],
           'com_determined': t.com_determined, 'bias': [t.bias.tolist(), t.bias_sigma.tolist()],
           'samples': t.fit.samples, 'outliers': t.fit.outliers, 'condition': t.fit.condition,
           'residual_scale': t.fit.rms}
    if mounting:
        row['mounting_deg'] = [np.degrees(t.rotation).tolist(), np.degrees(t.rotation_sigma).tolist()]
    return row


def format_report(report: dict) -> str:
    """Return the table of estimates with their 1-sigma and the poses used."""
    lines = []
    for name, t in report.get('tools', {}).items():
        lines.append(f'sensor {name}: {t["samples"]} samples ({t["outliers"]} outliers), '
                     f'condition {t["condition"]:.3g}, residual scale {t["residual_scale"]:.3g}')
        lines.append(f'  tool mass    {t["mass"][0]:10.4f} +- {t["mass"][1]:.2g} kg')
        lines.append('  tool com     ' + _pm(*t['com'], 'm') + ('' if t['com_determined'] else ' (mass ~0: origin)'))
        lines.append('  force bias   ' + _pm(t['bias'][0][:3], t['bias'][1][:3], 'N'))
        lines.append('  torque bias  ' + _pm(t['bias'][0][3:], t['bias'][1][3:], 'N m'))
        if 'mounting_deg' in t:
            lines.append('  mounting     ' + _pm(*t['mounting_deg'], 'deg (rotation vector)'))
    if 'object' in report:
        o = report['object']
        lines.append(f'held object: {o["samples"]} samples ({o["outliers"]} outliers), condition '
                     f'{o["condition"]:.3g}, residual scale {o["residual_scale"]:.3g}')
        lines.append(f'  mass         {o["mass"][0]:10.4f} +- {o["mass"][1]:.2g} kg')
        lines.append('  com          ' + _pm(*o['com'], 'm'))
    if 'note' in report:
        lines.append('note: ' + report['note'])
    for key in ('tool', 'object'):
        if f'{key}_poses' in report:
            lines += _rests_lines(key, report[f'{key}_poses'], report[f'{key}_samples'])
    return '\n'.join(lines)


def _rests_lines(key: str, poses: list, samples: dict) -> list:
    still = samples['still_below']
    lines = [f'{key} poses used (still: tilt rate <= {still["tilt_rate_rad_s"]:.3g} rad/s, tilt acceleration <= '
             f'{still["tilt_acceleration_rad_s2"]:.3g} rad/s^2, from {still["from"]}; settle time measured '
             f'{samples["settle_s"]:.3g} s):']
    lines += [f'  {p["from_s"]:9.3f} s to {p["to_s"]:9.3f} s  {p["samples"]:6d} samples  '
              f'gravity in the object frame {p["gravity_object"]}' for p in poses]
    dropped = ', '.join(f'{why} {count}' for why, count in samples['samples'].items() if why != 'kept')
    lines.append(f'{key} samples dropped ({dropped}):')
    lines += [f'  {d["from_s"]:9.3f} s to {d["to_s"]:9.3f} s  {d["samples"]:6d} samples  {d["why"]}'
              for d in samples['dropped']]
    return lines


def _pm(values, sigmas, unit: str) -> str:
    return '  '.join(f'{v:9.4f} +- {s:.2g}' for v, s in zip(values, sigmas)) + f' {unit}'


def _run(args: argparse.Namespace, body) -> int:
    from wrench_distribution.config.schema import ConfigError
    from .command import analyzer_config_and_bag
    try:
        return body(args, analyzer_config_and_bag(args))
    except (BagError, ConfigError) as err:
        message = str(err)
    except WrenchDistributionError as err:  # a refusal of the estimator, or data the core refuses
        message = f'{args.command} refused: {err}'
    except MemoryError:
        message = 'out of memory'
    from .command import _error
    return _error(message[:2000])


def run_identify(args: argparse.Namespace) -> int:
    """Run ``identify``; 0 on success, 2 on a user error (message on stderr)."""
    return _run(args, _identify)


def _identify(args: argparse.Namespace, config: Any) -> int:
    import yaml

    from wrench_distribution.config.calibration import checked
    from wrench_distribution.config.files import FileRefused, write_atomically
    from wrench_distribution.config.schema import ConfigError
    from wrench_distribution.engine.calibration import fragment
    report, parameters = identify_document(args, config)
    try:
        checked(parameters, config.as_parameters())
        write_atomically(args.out, '# written by wrench-distribution identify ' + str(args.bag) + '\n'
                         + yaml.safe_dump(fragment(parameters, args.node_name), sort_keys=False))
    except (ConfigError, FileRefused) as err:
        raise ConfigError(f'identify refused: {err}; nothing written') from None
    except OSError as err:
        raise BagError(f'cannot write {args.out}: {err}; nothing written') from None
    report['written'] = str(args.out)
    from .command import _print
    return _print(json.dumps(report, indent=2) if args.json else format_report(report) + f'\nwritten: {args.out}')


def run_signs(args: argparse.Namespace) -> int:
    """Run ``check-signs``; 0 when every sign is right, 1 when one is wrong or undetermined, 2 on error."""
    return _run(args, _signs)


def _signs(args: argparse.Namespace, config: Any) -> int:
    from wrench_distribution.engine.calibration import check_signs
    from wrench_distribution.engine.sensing import parse_biases
    recording = record_bag(args.bag, config, args.namespace, args.node_name)
    mask = _window(recording, args.held, '--held')
    labels, _ = _rests(recording, mask, *_carried(recording, mask, config.sensors,
                                                  config.settings.object_mass), 'with the object held')
    rows = check_signs(recording, config.sensors, parse_biases(config.settings.sensor_biases,
                                                               len(config.effectors)),
                       list(config.effectors), labels)
    from .command import _print
    lines = [f'{"effector":<12} {"configured":>10} {"measured":>9} {"upward N":>10} {"z":>8}  fix']
    for r in rows:
        measured = '?' if r['measured'] is None else f'{r["measured"]:+d}'
        lines.append(f'{r["effector"]:<12} {r["configured"]:>+10d} {measured:>9} {r["upward_force"]:>10.3f} '
                     f'{r["z"]:>8.1f}  {r["fix"]}')
    _print(json.dumps(rows, indent=2) if args.json else '\n'.join(lines))
    return 0 if all(r['fix'] == 'ok' for r in rows) else 1
