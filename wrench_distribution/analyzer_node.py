"""Analyzer node: n F/T streams -> manipulating and constraint parts, resultant, internal load.

A thin adapter around the ROS-free :class:`~wrench_distribution.engine.AnalysisEngine`,
which ``analyze-bag`` runs too: this node subscribes one ``WrenchStamped`` F/T topic per
effector (``<effector>/ft_sensor``) and the contact poses (a PoseArray topic, static
parameters, or tf2), hands every reading to the engine (synchronisation, contact and
sensor poses at the sample's stamp, sensor models, gravity, solver cache) and publishes
what it returns, with diagnostics for what it dropped.

``~/tare`` (``std_srvs/Trigger``) averages the newest ``tare_samples`` samples into sensor
biases (:meth:`AnalysisEngine.tare`, ``tare_state``) and writes them into ``sensor_biases``
(the one parameter this node writes itself); the calibration services
(:mod:`~wrench_distribution.ros.calibration_services`) identify tools, biases and the object
from captured poses and save them to ``calibration_file``. At start-up, the findings of
``wrench-distribution check-config`` on the parameter files it was given are logged as WARN.
"""
import math
import sys
from typing import List, Optional

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Float64, Float64MultiArray
from std_srvs.srv import Trigger

from wrench_distribution.config.check import warn_findings
from wrench_distribution.config.loading import build_core_objects, load_analyzer_config
from wrench_distribution.config.schema import ANALYZER_PARAMS
from wrench_distribution.config.validation import validate_params
from wrench_distribution.core.codec import ns_to_stamp, seconds_to_ns, stamp_to_ns
from wrench_distribution.core.messages import fill_wrench, wrench_to_array
from wrench_distribution.engine import AnalysisEngine, Drop
from wrench_distribution.engine.friction import FrictionStage
from wrench_distribution.engine.sensing import TareWindow
from wrench_distribution.engine.status import regime_word
from wrench_distribution.ros.calibration_services import CalibrationServices
from wrench_distribution.ros.conversions import make_internal_load_msg, make_wrench_stamped
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, OK, SimClockMonitor,
                                                 STALE, start_steady_timers, WARN)
from wrench_distribution.ros.friction import friction_message
from wrench_distribution.ros.parameters import (add_parameter_callbacks, checked_changes,
                                                declare_and_validate)
from wrench_distribution.ros.pose_inputs import PoseInputs
from wrench_distribution.ros.qos import qos_from_name
from wrench_distribution.ros.runner import run_node

_SPECS = {s.name: s for s in ANALYZER_PARAMS}
_CONCERNS = ('input', 'contacts', 'sensing', 'solver', 'clock', 'friction')


#: cause of a drop -> (diagnostic level, concern, legacy counter)
_DROPS = {
    'future': (ERROR, 'input', None), 'nan': (ERROR, 'input', 'rejected_nan'),
    'frame': (ERROR, 'input', None), 'unsynchronised': (WARN, 'input', None),
    'stale': (WARN, 'input', 'stale_drops'), 'out_of_order': (WARN, 'input', None),
    'no_contacts': (ERROR, 'contacts', 'no_contacts'),
    'no_orientation': (ERROR, 'sensing', 'no_orientation'),
    'solver_nan': (ERROR, 'solver', 'rejected_nan'),
}


class AnalyzerNode(Node):
    """The ``wrench_analyzer`` node.

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.node.Node``.
    :raises ConfigError: on invalid parameters (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_analyzer', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        cfg = declare_and_validate(self, ANALYZER_PARAMS, 'analyzer')
        typed = load_analyzer_config(cfg)  # core objects, sensors; ConfigError naming the cause
        self._cfg = cfg
        self._names: List[str] = cfg['effectors']
        self._diag = DiagnosticsState(f'{self.get_name()}: analysis', self.get_name(),
                                      _CONCERNS, self.get_logger())
        self._friction = FrictionStage(cfg, 'check')
        self._friction_pub = self.create_publisher(Float64MultiArray, cfg['friction_topic'], 10) \
            if cfg['friction_topic'] and self._friction.active else None
        self._last_stamp_ns: List[Optional[int]] = [None] * len(self._names)
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._sim_clock = SimClockMonitor()
        self._create_outputs(cfg, typed.topics, typed.contact_frames)
        self._inputs = PoseInputs(self, typed, self._diag)
        self._engine = AnalysisEngine(typed, self._inputs.contacts, self._inputs.sensors,
                                      self._friction.extras, self._on_rebuild,
                                      self._inputs.orientation)
        self._engine.record_tare(TareWindow(cfg['tare_samples']))
        self._tare_report = 'not tared by this node'
        self._calibration = CalibrationServices(self, self._engine, lambda name: self._cfg[name],
                                                self._names, typed.sensors)
        self._inputs.start(self._engine, self._publish_step)
        self.create_service(Trigger, '~/tare', self._on_tare)
        warn_findings(self.get_logger().warning, sys.argv)  # check-config, both sections
        in_qos = qos_from_name(cfg['input_qos'], cfg['qos_depth'])
        ft_topics = typed.topics['ft']
        for i, t in enumerate(ft_topics):
            self.create_subscription(WrenchStamped, t, self._make_cb(i), in_qos)
        start_steady_timers(self, cfg['diagnostics_period'], self._publish_diagnostics,
                            cfg['summary_period'], self._log_drop_summary)
        add_parameter_callbacks(self, _SPECS, self._check_parameters, self._apply_parameters)
        self.get_logger().info(f'analysing {", ".join(ft_topics)} (contacts from '
                               f'{cfg["contact_source"]}, outputs in the '
                               f'{cfg["output_frame"]} frame)')

    def _create_outputs(self, cfg: dict, topics: dict, contact_frames: List[str]) -> None:
        """Create the publishers and reusable messages of every output.

        :param topics: ``AnalyzerConfig.topics`` (per-effector topics resolved).
        """
        out_qos = qos_from_name(cfg['output_qos'], cfg['qos_depth'])
        out_frames = ([cfg['object_frame']] * len(contact_frames) if cfg['output_frame'] == 'object'
                      else contact_frames)
        self._wrench_outputs = [  # (quantity, publishers, messages), one per effector
            (part, [self.create_publisher(WrenchStamped, t, out_qos) for t in topics[part]],
             [make_wrench_stamped(f) for f in out_frames])
            for part in ('manipulating', 'constraint', 'internal', 'invariant')]
        self._norm_outputs = [(attr, self.create_publisher(Float64, cfg[f'{attr}_topic'], out_qos))
                              for attr in ('internal_load_norm', 'invariant_norm') if cfg[f'{attr}_topic']]
        self._obj_pub = self.create_publisher(WrenchStamped, cfg['object_wrench_topic'], out_qos)
        self._obj_msg = make_wrench_stamped(cfg['object_frame'])
        self._il_pub = self.create_publisher(Float64MultiArray, cfg['internal_load_topic'],
                                             out_qos)
        self._il_msg = make_internal_load_msg([])
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

    def _on_rebuild(self, distributor) -> None:
        self._il_msg = make_internal_load_msg(distributor.basis_names)
        self._diag.basis(distributor.basis_names)
        self._diag.count('solver_builds')

    def _make_cb(self, i: int):
        def cb(msg: WrenchStamped) -> None:
            self._on_ft(i, msg)
        return cb

    # -- the per-message path -----------------------------------------------------------
    def _on_ft(self, i: int, msg: WrenchStamped) -> None:
        stamp = stamp_to_ns(msg.header.stamp)
        self._last_stamp_ns[i] = stamp
        self._publish_step(self._engine.offer(i, stamp, wrench_to_array(msg.wrench),
                                              self._ros_clock.now().nanoseconds,
                                              msg.header.frame_id))

    def _publish_step(self, step) -> None:
        """Report the drops and publish the samples of one engine step."""
        for drop in step.drops:
            self._drop(drop)
        for sample in step.samples:
            self._publish_sample(sample)

    def _drop(self, drop: Drop) -> None:
        """Count a drop: one reading, or one per effector for a whole sample."""
        level, concern, legacy = _DROPS[drop.cause]
        if drop.cause == 'unsynchronised' and 'out of sync' in drop.message:
            legacy = 'skew_drops'
        which = range(len(self._names)) if drop.effector < 0 else [drop.effector]
        for k, i in enumerate(which):
            self._diag.drop(self._names[i], drop.cause, drop.message, level, concern,
                            legacy if k == 0 else None, log=k == 0)

    def _publish_sample(self, sample) -> None:
        values = sample.result.values
        if not all(np.isfinite(values[q]).all() for q in ('manipulating', 'constraint',
                                                          'resultant', 'internal_load')):
            return self._drop(Drop(-1, 'solver_nan', 'analysis returned NaN or Inf; no output'))
        stamp = ns_to_stamp(sample.stamp_ns, TimeMsg)
        for part, pubs, msgs in self._wrench_outputs:
            rows = values[part][0]
            if not np.isfinite(rows).all():
                continue  # the invariant may fail alone; the other outputs stand
            for m, row, pub in zip(msgs, rows.tolist(), pubs):
                m.header.stamp = stamp
                fill_wrench(m.wrench, row)
                pub.publish(m)
        self._obj_msg.header.stamp = stamp
        fill_wrench(self._obj_msg.wrench, values['resultant'][0].tolist())
        self._obj_pub.publish(self._obj_msg)
        self._il_msg.data = values['internal_load'][0].tolist()
        self._il_pub.publish(self._il_msg)
        for attr, pub in self._norm_outputs:
            value = float(values[attr][0])
            if math.isfinite(value):
                pub.publish(Float64(data=value))
        if self._friction.active:
            model = self._friction.model(sample.distributor)
            self._friction.check = model.check(sample.contact_wrenches)
            if self._friction_pub is not None:
                self._friction_pub.publish(friction_message(self._friction.check, self._names))
        self._diag.count('samples_published')

    # -- tare --------------------------------------------------------------------------
    def _on_tare(self, request, response):
        """``~/tare``: biases from the newest ``tare_samples`` samples, written back."""
        window = self._engine.tare_window
        want = self._cfg['tare_samples']
        try:
            if len(window.rows) < want:
                raise ValueError(f'only {len(window.rows)} of tare_samples={want} samples '
                                 'recorded since the start or the last change')
            biases, spread, count = self._engine.tare(self._cfg['tare_state'])
        except ValueError as e:
            response.success, response.message = False, f'tare refused: {e}'
            self.get_logger().error(response.message)
            return response
        values = [float(x) for x in biases.ravel()]
        result = self.set_parameters([Parameter('sensor_biases', Parameter.Type.DOUBLE_ARRAY,
                                                values)])[0]
        if not result.successful:
            response.success, response.message = False, f'tare refused: {result.reason}'
            return response
        self._tare_report = (f"{self._cfg['tare_state']}, {count} samples, largest spread "
                             f'{float(spread.max()):.4g}')
        response.success = True
        response.message = 'sensor_biases = ' + ', '.join(
            f'{name}: [{", ".join(f"{x:.6g}" for x in row)}]'
            for name, row in zip(self._names, biases.tolist()))
        self.get_logger().info(f'tare ({self._tare_report}): {response.message}')
        return response

    def _sensing_values(self) -> dict:
        """Key/values of the ``sensing`` status: biases in use, last tare, orientation drops."""
        values = {f'sensor_biases.{name}': ', '.join(f'{x:.9g}' for x in row)
                  for name, row in zip(self._names, self._engine.biases.tolist())}
        values['tare'] = self._tare_report
        values['samples_without_orientation'] = str(self._engine.no_orientation)
        values.update(self._calibration.values())
        return values

    # -- diagnostics (steady clock) ------------------------------------------------------
    def _conditions(self, now_ns: int, values: dict) -> dict:
        cond: dict = {c: [] for c in _CONCERNS}
        why = self._engine.contact_problem or self._inputs.problem()
        if why is not None:
            cond['contacts'].append((ERROR, why))
        if self._engine.orientation_problem is not None:
            cond['sensing'].append((ERROR, self._engine.orientation_problem))
        missing = [n for n, s in zip(self._names, self._last_stamp_ns) if s is None]
        if missing:
            cond['input'].append((WARN, 'no F/T data yet from: ' + ', '.join(missing)))
        max_age_ns = seconds_to_ns(self._cfg['max_age'])
        stale = []
        for name, s in zip(self._names, self._last_stamp_ns):
            if s is None:
                continue
            values[f'age_s.{name}'] = f'{(now_ns - s) * 1e-9:.4f}'
            if max_age_ns > 0 and now_ns - s > max_age_ns:
                stale.append(name)
        if stale:
            cond['input'].append((STALE, 'stale F/T stream(s): ' + ', '.join(stale)
                                  + f' (older than max_age={self._cfg["max_age"]:g} s)'))
        clock = self._sim_clock.problem()
        if clock is not None:
            cond['clock'].append(clock)
        if not any(cond.values()) and not self._diag.counters.get('samples_published'):
            cond['input'].append((OK, 'waiting for F/T samples'))
        return cond

    def _publish_diagnostics(self) -> None:
        now = self._ros_clock.now()
        self._sim_clock.tick(now.nanoseconds, bool(self.get_parameter('use_sim_time').value))
        values: dict = {}
        cond = self._conditions(now.nanoseconds, values)
        if self._engine.last_out_ns is not None:
            values['last_output_stamp_s'] = f'{self._engine.last_out_ns * 1e-9:.6f}'
        dist = self._engine.cache.distributor
        if dist is not None:
            values['regime'] = dist.regime.name
            values['regime_reasons'] = ', '.join(dist.regime.reasons)
            values['regime_message'] = regime_word(dist.regime)
            values['basis'] = ';'.join(dist.basis_names)
        friction = self._friction.condition() if self._friction.active else None
        if friction is not None:
            cond['friction'].append(friction)
        values.update(self._friction.values())
        self._diag_pub.publish(self._diag.build(now.to_msg(), cond, values,
                                                {'sensing': self._sensing_values()}))

    def _log_drop_summary(self) -> None:
        line = self._diag.drop_summary()
        if line is not None:
            self.get_logger().warning(f'{line} (last {self._cfg["summary_period"]:g} s)')

    # -- runtime parameters --------------------------------------------------------------
    def _check_parameters(self, params) -> tuple:
        """On-set callback body: validate a request without changing the node.

        :param params: the requested parameters.
        :return: ``(reason or None, plan)``; the plan is what :meth:`_apply_parameters` needs.
        """
        reason, new, touched = checked_changes(params, _SPECS, self._cfg)
        if reason is not None:
            return reason, None
        try:
            validate_params('analyzer', new)
            dist = None
            options = None
            if 'torque_share' in touched:
                _, _, options = build_core_objects(new)
                if self._engine.cache.distributor is not None:
                    dist = self._engine.cache.try_options(options)
        except ValueError as e:
            return str(e), None
        return None, (new, options, dist)

    def _apply_parameters(self, plan: tuple) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        new, options, dist = plan
        if options is not None:
            self._engine.adopt_options(options, dist)
        self._cfg = new
        self._engine.set_limits(new['sync_tolerance'], new['max_age'], new['max_future'],
                                new['contact_timeout'])
        self._engine.set_biases(new['sensor_biases'])
        if self._inputs.orientation is not None:
            self._inputs.orientation.set_timeout(seconds_to_ns(new['orientation_timeout']))
        if self._engine.tare_window.size != new['tare_samples']:
            self._engine.record_tare(TareWindow(new['tare_samples']))
            self._calibration.resize(new['tare_samples'])


def main(args=None) -> int:
    """Run the analyzer node (console script ``analyzer``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(AnalyzerNode, 'wrench_analyzer', args)


if __name__ == '__main__':
    sys.exit(main())
