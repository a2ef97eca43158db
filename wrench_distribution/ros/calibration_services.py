"""The analyzer's calibration services (``std_srvs/Trigger``), on the ROS-free calibration engine.

- ``~/calibration/capture``: the newest ``tare_samples`` analysed samples newer than the last
  capture become one pose, its samples at rest (refused when the poses moved, or when less than
  75 % of them are at rest: :func:`~..engine.rests.find_rests`); the recorded samples stay for
  ``~/check_signs``;
  the response says the poses and samples collected, the gravity spread, and what the poses
  determine so far (or the motion still missing).
- ``~/calibration/identify_tools``: biases and tools (and, with ``calibration_mounting``, the
  mounting rotations) from the captured poses, tools free. Applied at once: the biases are
  written into ``sensor_biases`` (as ``~/tare`` does), the tools and rotations are handed to
  the analysis engine. The captured poses are then cleared.
- ``~/calibration/identify_object``: the held object's mass and centre of mass from the
  captured poses (tools and biases as they are now). Kept in the calibration; they take
  effect at the next start of both nodes (the distributor and the analyzer share one basis
  only while their ``object_com`` agree: the analyzer does not change its own alone).
- ``~/calibration/identify_grasps``: the contacts' poses relative to each other from the captured
  rests, the object held still at several internal loads (core/grasp_identification.py).
  Applied at once in the analysis engine (its static contacts replaced: engine state, reported
  in the ``sensing`` diagnostics, not a parameter write); ``~/save_calibration`` writes them as
  ``contact_positions`` and ``contact_orientations`` for both nodes' next start. Only with
  ``contact_source: static``. The captured poses are then cleared.
- ``~/calibration/clear``: forget the captured poses.
- ``~/check_signs``: each sensor's sign from the weight it carries over the newest
  ``tare_samples`` samples (the object held at rest); success when every configured sign is right.
- ``~/save_calibration``: write the calibration in use (biases, including the tare's, tools,
  rotations, object, contacts) to ``calibration_file`` (fixed at start-up), the file both nodes
  load at their next start: refused, nothing written, when a value is beyond its bounds
  (:func:`~..config.calibration.checked`); written whole or not at all, never through a link
  (:func:`~..config.files.write_atomically`).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
import yaml

from wrench_distribution.config.calibration import checked
from wrench_distribution.config.files import FileRefused, write_atomically
from wrench_distribution.config.schema import ConfigError
from wrench_distribution.core.calibration import check_object_motion, check_tool_motion, pose_directions
from wrench_distribution.core.errors import WrenchDistributionError
from wrench_distribution.engine import calibration as E
from wrench_distribution.engine.rests import carried, find_rests


class CalibrationServices:
    """Services of one analyzer node: captured poses, identification, saving.

    :param node: the analyzer node (services, ``set_parameters``).
    :param engine: its analysis engine.
    :param config: returns the node's configuration in force.
    :param names: effector names.
    :param sensors: the configured sensor models (what tools are identified against).
    """

    def __init__(self, node, engine, config: Callable[[], Any], names: list, sensors: list) -> None:
        self.node = node
        self.engine = engine
        self.config = config
        self.names = list(names)
        self.sensors = list(sensors)
        self.mounting = False
        self.captured: list = []
        self.captured_up_to = -1  # stamp (ns) of the newest sample a capture took: each takes newer ones
        self.tools: Optional[list] = None
        self.object: Optional[tuple] = None
        self.grasps = None
        self.report = 'none'
        self.resize(config().settings.tare_samples)
        for name, callback in (('calibration/capture', self._capture), ('calibration/clear', self._clear),
                               ('calibration/identify_tools', self._identify_tools),
                               ('calibration/identify_object', self._identify_object),
                               ('calibration/identify_grasps', self._identify_grasps),
                               ('save_calibration', self._save), ('check_signs', self._check_signs)):
            node.create_service(Trigger, f'~/{name}', callback)

    def resize(self, samples: int) -> None:
        """Record the newest ``samples`` analysed samples (``tare_samples``)."""
        self.engine.set_recorder(E.CalibrationRecorder(int(samples)))

    def values(self) -> dict:
        """Key/values for the ``sensing`` diagnostics status (the identified contacts in use, if any)."""
        out = {'calibration': self.report, 'calibration_poses': str(len(self.captured))}
        if self.grasps is not None:
            out['contacts'] = (f'identified from {self.grasps.rests} rests (rank {self.grasps.rank} of '
                               f'{self.grasps.correction.size}), not the contact_positions/orientations parameters')
            for name, c in zip(self.names, self.grasps.correction):
                out[f'contact_correction.{name}'] = (f'{_fixed(c[:3] * 1e3)} mm, '
                                                     f'{_fixed(np.degrees(c[3:]))} deg')
        return out

    def _recording(self):
        rows = [row for pose in self.captured for row in pose]
        labels = np.concatenate([np.full(len(pose), j) for j, pose in enumerate(self.captured)])
        return E.recording_of(rows), labels

    def _capture(self, request, response):
        want = self.config().settings.tare_samples
        rows = [row for row in self.engine.recorder.rows if row[0] > self.captured_up_to][-want:]
        if len(rows) < want:
            return _answer(response, False, f'capture refused: only {len(rows)} of tare_samples={want} samples '
                           'since the last capture; hold still and retry')
        recording = E.recording_of(rows)
        rests = find_rests(recording, *carried(self.engine.config.sensors, recording.poses[-1],
                                               self.config().settings.object_mass), window_s=0.0)
        refusal = _not_at_rest(rests, want)
        if refusal:
            return _answer(response, False, f'capture refused: {refusal}; hold still and retry')
        self.captured.append([row for row, label in zip(rows, rests.labels) if label >= 0])
        self.captured_up_to = rows[-1][0]
        recording, labels = self._recording()
        directions = pose_directions(recording.gravity, labels)
        spread = float(np.degrees(np.arccos(np.clip(directions @ directions.T, -1, 1).min())))
        return _answer(response, True, f'pose {len(self.captured)} captured ({len(self.captured[-1])} of {want} '
                       f'samples at rest, gravity in the object frame {np.round(directions[-1], 3).tolist()}); '
                       f'{len(self.captured)} poses, {len(labels)} samples, gravity spread {spread:.1f} deg; '
                       + self._so_far(recording, labels))

    def _so_far(self, recording, labels) -> str:
        """Say what the captured poses determine so far (the first refusal, else ready)."""
        gravity = E.contact_gravity(recording)
        sensors = self.engine.config.sensors
        try:
            for i, sensor in enumerate(sensors):
                check_tool_motion(pose_directions(gravity[:, i] @ sensor.rotation, labels),
                                  f'sensor {self.names[i]}', self.config().calibration.mounting)
            tools = 'tools: determined'
        except WrenchDistributionError as err:
            tools = f'tools: not yet ({err})'
        try:
            check_object_motion(pose_directions(recording.gravity, labels))
            held = 'object: determined'
        except WrenchDistributionError as err:
            held = f'object: not yet ({err})'
        return f'{tools}; {held}'

    def _clear(self, request, response):
        count = len(self.captured)
        self.captured = []
        return _answer(response, True, f'{count} captured poses forgotten')

    def _identify_tools(self, request, response):
        if not self.captured:
            return _answer(response, False, 'identify_tools refused: no pose captured (~/calibration/capture)')
        mounting = self.config().calibration.mounting
        recording, labels = self._recording()
        try:
            tools = E.identify_tools(recording, self.sensors, labels, self.names, mounting)
        except WrenchDistributionError as err:
            return _answer(response, False, f'identify_tools refused: {err}')
        biases = [float(x) for t in tools for x in t.bias]
        result = self.node.set_parameters([Parameter('sensor_biases', Parameter.Type.DOUBLE_ARRAY, biases)])[0]
        if not result.successful:
            return _answer(response, False, f'identify_tools refused: {result.reason}')
        self.engine.set_sensors(E.calibrated_sensors(self.sensors, tools))
        self.tools, self.mounting = tools, mounting
        self.captured = []
        self.report = f'tools identified from {len(np.unique(labels))} poses'
        text = '; '.join(
            f'{name}: mass {t.mass:.4f} +- {t.mass_sigma:.2g} kg, com {np.round(t.com, 4).tolist()} +- '
            f'{float(t.com_sigma.max()):.2g} m, bias {np.round(t.bias, 4).tolist()}'
            + (f', mounting {np.round(np.degrees(t.rotation), 3).tolist()} deg' if mounting else '')
            for name, t in zip(self.names, tools))
        return _answer(response, True, f'applied: {text}')

    def _identify_object(self, request, response):
        if not self.captured:
            return _answer(response, False, 'identify_object refused: no pose captured (~/calibration/capture)')
        recording, labels = self._recording()
        try:
            obj = E.identify_held_object(recording, self.engine.config.sensors, self.engine.biases, labels)
        except WrenchDistributionError as err:
            return _answer(response, False, f'identify_object refused: {err}')
        self.object = obj
        self.captured = []
        self.report = f'object identified from {len(np.unique(labels))} poses'
        return _answer(response, True, f'object_mass {obj.mass:.4f} +- {obj.mass_sigma:.2g} kg, object_com '
                       f'{np.round(obj.com, 4).tolist()} +- {float(obj.com_sigma.max()):.2g} m; saved by '
                       '~/save_calibration, in effect at the next start')

    def _identify_grasps(self, request, response):
        source = self.config().contact_source
        if source != 'static':
            return _answer(response, False, f"identify_grasps refused: contact_source is '{source}': the contact "
                           'poses come from it at every sample, and grasp identification corrects static '
                           'contacts only (contact_source: static)')
        if not self.captured:
            return _answer(response, False, 'identify_grasps refused: no rest captured (~/calibration/capture '
                           'at each internal load)')
        recording, labels = self._recording()
        config = self.engine.config
        try:
            grasps = E.identify_contacts(recording, config.sensors, self.engine.biases, labels, self.names,
                                         [t == 'rigid' for t in config.contact_types],
                                         self.config().settings.object_mass,
                                         list(self.config().object_model.com))
            self.engine.poses.replace(np.concatenate([grasps.positions, grasps.quaternions], axis=1),
                                      'static configuration, corrected by ~/calibration/identify_grasps')
        except (WrenchDistributionError, ValueError) as err:
            return _answer(response, False, f'identify_grasps refused: {err}')
        self.grasps = grasps
        self.captured = []
        self.report = f'grasps identified from {grasps.rests} rests'
        return _answer(response, True, 'applied: ' + grasp_summary(grasps, self.names))

    def _check_signs(self, request, response):
        want = self.config().settings.tare_samples
        if len(self.engine.recorder) < want:
            return _answer(response, False, f'check_signs refused: only {len(self.engine.recorder)} of '
                           f'tare_samples={want} samples; hold the object still and retry')
        recording = self.engine.recorder.recording()
        rows = E.check_signs(recording, self.engine.config.sensors, self.engine.biases, self.names,
                             np.zeros(len(recording.stamps_ns), int))
        text = '; '.join(f"{r['effector']}: configured {r['configured']:+d}, measured "
                         f"{'?' if r['measured'] is None else format(r['measured'], '+d')} "
                         f"({r['upward_force']:.3g} N upward, z {r['z']:.3g}): {r['fix']}" for r in rows)
        return _answer(response, all(r['fix'] == 'ok' for r in rows), text)

    def parameters(self) -> dict:
        """Return the calibration in use, as analyzer parameter values (the biases always, a tare's too)."""
        tf_sensors = bool(self.config().settings.sensor_frames)  # orientations from tf: not written
        out = E.calibration_parameters(self.tools, self.object, self.mounting and not tf_sensors)
        if self.grasps is not None:
            out.update(E.contact_parameters(self.grasps))
        out['sensor_biases'] = [round(float(x), 9) for x in self.engine.biases.ravel()]
        return out

    def _save(self, request, response):
        path = self.config().calibration.file
        if not path:
            return _answer(response, False, 'save_calibration refused: calibration_file is empty (set it at start-up '
                           'to the file the launch files give, e.g. ~/.ros/wrench_distribution_calibration.yaml)')
        parameters = self.parameters()
        try:
            checked(parameters, self.config().as_parameters())
            document = E.fragment(parameters, self.node.get_name())
            written = write_atomically(path, '# written by ~/save_calibration of '
                                       + self.node.get_fully_qualified_name() + '\n'
                                       + yaml.safe_dump(document, sort_keys=False))
        except (ConfigError, FileRefused) as err:
            return _answer(response, False, f'save_calibration refused: {err}; nothing written')
        except OSError as err:
            return _answer(response, False, f'save_calibration failed: {err}; {path} is as it was')
        return _answer(response, True, f"saved {', '.join(parameters)} to {written}")


#: The least share of a capture's samples at rest: a rest whose readings still settle over more
#: than a quarter of the window (a feedback loop converging) is asked again later.
MIN_KEPT_SHARE = 0.75


def _not_at_rest(rests, want: int) -> str:
    """Why the samples of a capture are not one rest (empty when they are: 75 % kept, nothing moving)."""
    counts = rests.counts()
    if counts.get('moving'):
        return (f'not at rest: the poses moved in {counts["moving"]} of the newest {want} samples (still means a '
                f'tilt rate <= {rests.omega_max:.3g} rad/s and a tilt acceleration <= {rests.alpha_max:.3g} rad/s^2, '
                f'from {rests.basis})')
    kept = np.unique(rests.labels[rests.labels >= 0])
    share = float(np.mean(rests.labels >= 0))
    if len(kept) != 1 or share < MIN_KEPT_SHARE:
        dropped = ', '.join(f'{why} {count}' for why, count in counts.items() if why != 'kept')
        return f'not at rest ({share:.0%} of the newest {want} samples in one steady pose; dropped: {dropped})'
    return ''


def _fixed(values) -> str:
    return '[' + ', '.join(f'{x:+.2f}' for x in values) + ']'


def grasp_summary(grasps, names: list) -> str:
    """Say what a grasp identification found: each contact's correction with 1-sigma, what is undetermined."""
    parts = [f'{name}: moved {_fixed(c[:3] * 1e3)} +- {_fixed(s[:3] * 1e3)} mm, turned {_fixed(np.degrees(c[3:]))} '
             f'+- {_fixed(np.degrees(s[3:]))} deg' for name, c, s in zip(names, grasps.correction, grasps.sigma)]
    text = '; '.join(parts) + (f'; rank {grasps.rank} of {grasps.correction.size}, condition {grasps.condition:.3g}, '
                               f'{grasps.rests} rests ({grasps.outliers} dropped)')
    if grasps.undetermined:
        text += '; held at the configured value (undetermined): ' + '; '.join(grasps.undetermined)
    return text + "; saved by ~/save_calibration for both nodes' next start"


def _answer(response, success: bool, message: str):
    response.success, response.message = success, message
    return response
