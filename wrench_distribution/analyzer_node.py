"""Analyzer node: n F/T streams -> manipulating and constraint parts, resultant, internal load.

A thin adapter around the ROS-free :class:`~wrench_distribution.engine.AnalysisEngine`,
which ``analyze-bag`` runs too: this node subscribes one ``WrenchStamped`` F/T topic per
effector (``<effector>/ft_sensor``) and the contact poses (a PoseArray topic, static
parameters, or tf2), hands every reading to the engine (synchronisation, contact and
sensor poses at the sample's stamp, sensor models, gravity, solver cache) and publishes
what it returns, with diagnostics for what it dropped. A managed node
(:mod:`~wrench_distribution.ros.managed`): it publishes only while active.

``~/tare`` (``std_srvs/Trigger``) averages the newest ``tare_samples`` samples into sensor
biases (:meth:`AnalysisEngine.tare`, ``tare_state``) and writes them into ``sensor_biases``
(the one parameter this node writes itself); the calibration services
(:mod:`~wrench_distribution.ros.calibration_services`) identify tools, biases and the object
from captured poses and save them to ``calibration_file``. At start-up, the findings of
``wrench-distribution check-config`` on the parameter files it was given are logged as WARN.
"""
import math
import sys
from typing import Callable, List, Optional

from geometry_msgs.msg import WrenchStamped
import numpy as np
from rclpy.parameter import Parameter
from std_msgs.msg import Float64, Float64MultiArray
from std_srvs.srv import Trigger

from wrench_distribution.config import ANALYZER_PARAMS, changed_config
from wrench_distribution.config.check import warn_findings
from wrench_distribution.core.codec import encode_wrench_payload, LabelledPayloads, ns_to_seconds
from wrench_distribution.engine import AnalysisEngine, Drop, Step
from wrench_distribution.engine.analysis import CONCERNS
from wrench_distribution.engine.health import SETTLE_PERIOD_S
from wrench_distribution.engine.sensing import TareWindow
from wrench_distribution.ros.calibration_services import CalibrationServices
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.ros.conversions import MalformedPayload, read_wrench_payload
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, OK, PARAMETER_COUNTERS,
                                                 SimClockMonitor, start_steady_timers)
from wrench_distribution.ros.followed_weights import FollowedWeightsInput
from wrench_distribution.ros.friction import friction_message
from wrench_distribution.ros.managed import LIFECYCLE, ManagedNode
from wrench_distribution.ros.node_clock import NodeClock
from wrench_distribution.ros.parameters import declare_config, requested_changes
from wrench_distribution.ros.qos import qos_from_name
from wrench_distribution.ros.readers import Readers
from wrench_distribution.ros.runner import run_node

_SPECS = {s.name: s for s in ANALYZER_PARAMS}
#: the effector-wrench outputs, in the order of the engine's quantities
_PARTS = ('manipulating', 'constraint', 'internal', 'invariant')


class AnalyzerNode(ManagedNode):
    """The ``wrench_analyzer`` node, a managed node (:mod:`~wrench_distribution.ros.managed`).

    It publishes its outputs only while active.

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.lifecycle.LifecycleNode``.
    :raises ConfigError: on invalid parameters with ``autostart`` (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_analyzer', **kwargs) -> None:
        super().__init__(node_name, 'analyzer', 'analysis', **kwargs)
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._now_ns = NodeClock(self._ros_clock).now_ns  # the message path's reading
        self._sim_clock = SimClockMonitor()
        self.start()

    def _configure(self) -> None:
        """Read and check the parameters, build the engine, make the outputs, inputs and services."""
        config = self._config = declare_config(self, ANALYZER_PARAMS, 'analyzer', self._given)
        self._names = list(config.effectors)
        self._diag = DiagnosticsState(f'{self.get_name()}: analysis', self.get_name(),
                                      (*CONCERNS, 'outputs', 'parameters', LIFECYCLE), self.get_logger(),
                                      key_concerns=PARAMETER_COUNTERS)
        self._create_outputs(config)
        self._inputs = ContactInput(self, config, self._diag)
        self._engine = AnalysisEngine(config, self._inputs.contacts, self._inputs.sensors,
                                      on_rebuild=self._on_rebuild,
                                      orientation=self._inputs.orientation, friction=True,
                                      health=True)
        self._weights = FollowedWeightsInput(self, config, self._engine)  # read-out follows them
        self._friction_pub = self.create_lifecycle_publisher(
            Float64MultiArray, config.topics.friction, 10) \
            if config.topics.friction and self._engine.checks_friction else None
        self._readers = Readers([pub for _, pubs, _ in self._wrench_outputs for pub in pubs]
                                + [self._obj_pub, self._il_pub]
                                + [pub for _, pub in self._norm_outputs]
                                + [self._friction_pub] * (self._friction_pub is not None))
        self._engine.record_tare(TareWindow(config.settings.tare_samples))
        self._tare_report = 'not tared by this node'
        self._calibration = CalibrationServices(self, self._engine, lambda: self._config,
                                                self._names, config.sensors)
        self._inputs.start(self._retry, self._engine.check_static)
        self.create_service(Trigger, '~/tare', self._on_tare)
        warn_findings(self.get_logger().warning, sys.argv)  # check-config, both sections
        in_qos = qos_from_name(config.ros.input_qos, config.ros.qos_depth)
        for i, t in enumerate(config.topics.ft):  # raw: decoded here (read_wrench_payload)
            self.create_subscription(WrenchStamped, t, self.when_active(self._make_cb(i)),
                                     in_qos, raw=True)
        steady = start_steady_timers(self, config.ros, self._publish_diagnostics,
                                     self._log_drop_summary)
        # the sensor set's block checks, off the per-message path (docs/health.md)
        self.create_timer(SETTLE_PERIOD_S, self._engine.health.settle, clock=steady)
        self.get_logger().info(f'analysing {", ".join(config.topics.ft)} (contacts from '
                               f'{config.contact_source}, outputs in the '
                               f'{config.settings.output_frame} frame)')

    def _create_outputs(self, config) -> None:
        """Create the publishers and reusable messages of every output."""
        topics = config.topics
        out_qos = qos_from_name(config.ros.output_qos, config.ros.qos_depth)
        out_frames = ([config.object_frame] * len(config.effectors)
                      if config.settings.output_frame == 'object' else config.contact_frames)
        publisher = self.create_lifecycle_publisher  # silent until activate
        self._wrench_outputs = [  # (quantity, publishers, frame ids), one per effector
            (part, [publisher(WrenchStamped, t, out_qos) for t in getattr(topics, part)],
             out_frames) for part in _PARTS]
        self._norm_outputs = [(attr, publisher(Float64, getattr(topics, attr), out_qos))
                              for attr in ('internal_load_norm', 'invariant_norm') if getattr(topics, attr)]
        self._counts: Optional[dict] = None  # the readers' counts the outputs read were listed for
        self._outputs_read: list = []
        self._obj_pub = publisher(WrenchStamped, topics.object_wrench, out_qos)
        self._obj_frame = config.object_frame
        self._il_pub = publisher(Float64MultiArray, topics.internal_load, out_qos)
        self._il_payloads = LabelledPayloads([])  # published raw, as the wrenches
        self._basis_names: List[str] = []
        self._internal_load_listeners: List[Callable] = []

    @property
    def internal_load_topic(self) -> str:
        """Return the measured internal load's topic, resolved (namespace and remappings applied)."""
        return self._il_pub.topic_name

    def add_internal_load_listener(self, listener: Callable) -> None:
        """Call ``listener(basis_names, values, health, stamp_ns)`` with each sample's measured internal load.

        For a node of the same process (``cell``): it runs within this node's callback, in
        addition to the message on ``internal_load_topic``. A listener added already is not
        added again; configure starts with none.
        """
        if listener not in self._internal_load_listeners:
            self._internal_load_listeners.append(listener)

    def _on_rebuild(self, basis_names: list) -> None:
        self._basis_names = list(basis_names)
        self._il_payloads = LabelledPayloads(basis_names)
        self._diag.basis(basis_names)
        self._diag.count('solver_builds')

    def _make_cb(self, i: int):
        def cb(payload: bytes) -> None:
            self._on_ft(i, payload)
        return cb

    # -- the per-message path -----------------------------------------------------------
    def _on_ft(self, i: int, payload: bytes) -> None:
        try:
            stamp_ns, frame_id, wrench = read_wrench_payload(payload)
        except MalformedPayload as e:
            self._publish_step(Step(drops=[Drop(i, 'malformed', "F/T reading of '"
                                                f"{self._names[i]}' is {e}; dropped")]))
            return
        self._publish_step(self._engine.offer(i, stamp_ns, wrench, self._now_ns(), frame_id))

    def _retry(self) -> None:
        self._publish_step(self._engine.retry(self._now_ns()))

    def _publish_step(self, step) -> None:
        """Report the drops and publish the samples of one engine step."""
        for drop in step.drops:
            which = range(len(self._names)) if drop.effector < 0 else [drop.effector]
            for k, i in enumerate(which):  # one reading, or one per effector for a sample
                self._diag.drop(self._names[i], drop.cause, drop.message, drop.level,
                                drop.concern, drop.counter if k == 0 else None, log=k == 0)
        for sample in step.samples:
            self._publish_sample(sample)

    def _publish_sample(self, sample) -> None:
        """Publish one sample on every output that has a subscriber (nothing else is computed).

        The outputs are volatile: a message without a matched subscription reaches nobody, so
        an output nobody reads costs nothing here (:class:`~wrench_distribution.ros.readers.Readers`),
        and the invariant state (an iterative solve) is computed only when one of its outputs
        is read.
        """
        self._weights.observe(sample.contact_wrenches)
        values = sample.result.values
        read = self._readers.read()
        stamp_ns = sample.stamp_ns  # the wrenches go raw (core.codec), the sample's stamp kept
        for part, observed in self._wrench_outputs_read(read):
            rows = values[part][0]
            if not np.isfinite(rows).all():
                continue  # the invariant may fail alone; the other outputs stand
            rows = rows.tolist()
            for k, pub, frame in observed:
                self.deliver(pub, encode_wrench_payload(stamp_ns, frame, rows[k]))
        if read[self._obj_pub]:
            self.deliver(self._obj_pub, encode_wrench_payload(stamp_ns, self._obj_frame,
                                                              values['resultant'][0].tolist()))
        health, friction_health = sample.health
        if read[self._il_pub]:
            self.deliver(self._il_pub, self._il_payloads.encode(values['internal_load'][0].tolist(), health))
        for listener in self._internal_load_listeners:
            listener(self._basis_names, values['internal_load'][0].copy(), health, stamp_ns)
        for attr, pub in self._norm_outputs:
            if read[pub]:
                value = float(values[attr][0])
                if math.isfinite(value):
                    self.deliver(pub, Float64(data=value))
        if self._friction_pub is not None and sample.friction is not None \
                and read[self._friction_pub]:
            self.deliver(self._friction_pub, friction_message(sample.friction, self._names,
                                                              friction_health))
        self._diag.count('samples_published')

    def _wrench_outputs_read(self, read: dict) -> list:
        """Return ``(quantity, [(effector index, publisher, frame id)])`` of the wrench outputs read.

        :param read: the readers' counts (:meth:`Readers.read`: the same mapping until they
            are counted again, so the list is made once per count).
        """
        if read is not self._counts:
            self._counts = read
            outputs = [(part, [(k, pub, frame) for k, (pub, frame) in enumerate(zip(pubs, frames))
                               if read[pub]]) for part, pubs, frames in self._wrench_outputs]
            self._outputs_read = [(part, observed) for part, observed in outputs if observed]
        return self._outputs_read

    # -- tare --------------------------------------------------------------------------
    def _on_tare(self, request, response):
        """``~/tare``: biases from the newest ``tare_samples`` samples, written back."""
        settings = self._config.settings
        state = settings.tare_state
        try:
            biases, spread, count = self._engine.tare(state, settings.tare_samples)
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
        self._tare_report = f'{state}, {count} samples, largest spread {float(spread.max()):.4g}'
        response.success = True
        response.message = 'sensor_biases = ' + ', '.join(
            f'{name}: [{", ".join(f"{x:.6g}" for x in row)}]'
            for name, row in zip(self._names, biases.tolist()))
        self.get_logger().info(f'tare ({self._tare_report}): {response.message}')
        return response

    # -- diagnostics (steady clock) ------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        now = self._ros_clock.now()
        self._sim_clock.tick(now.nanoseconds, bool(self.get_parameter('use_sim_time').value))
        report = self._engine.report(now.nanoseconds)
        cond = report.conditions
        self._diag.counters.update(report.counters)
        why = self._inputs.problem(now.nanoseconds, self._engine.has_solver)
        if why is not None and not cond['contacts']:
            cond['contacts'].append((ERROR, why))
        self._weights.diagnose(cond, report.values)
        clock = self._sim_clock.problem()
        if clock is not None:
            cond['clock'].append(clock)
        if not any(cond.values()) and not self._diag.counters.get('samples_published'):
            cond['input'].append((OK, 'waiting for F/T samples'))
        sensing = report.per_concern['sensing']
        sensing['tare'] = self._tare_report
        sensing.update(self._calibration.values())
        self._diag.counters.update(self._refused.counters)
        report.per_concern['parameters'] = self._refused.values()
        self._lifecycle_diagnostics(cond, report.per_concern)
        self.deliver(self._diag_pub, self._diag.build(now.to_msg(), cond, report.values,
                                                      report.per_concern))

    def _log_drop_summary(self) -> None:
        line = self._diag.drop_summary()
        if line is not None:
            self.get_logger().warning(
                f'{line} (last {ns_to_seconds(self._config.ros.summary_period_ns):g} s)')

    # -- runtime parameters --------------------------------------------------------------
    def _check_parameters(self, params) -> tuple:
        """On-set callback body: validate a request without changing the node.

        :param params: the requested parameters.
        :return: ``(reason or None, plan)``; the plan is what :meth:`_apply_parameters` needs.
        """
        try:
            change = changed_config(self._config, requested_changes(params, _SPECS))
            return None, self._engine.plan(change)
        except ValueError as e:  # ConfigError and core errors: named by the shell
            return e, None

    def _apply_parameters(self, plan) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        self._engine.adopt(plan)
        self._config = config = plan.change.config
        if 'tare_samples' in plan.change.touched:
            self._calibration.resize(config.settings.tare_samples)
        self._inputs.set_timeouts(config.contact_timeout_ns,
                                  config.settings.orientation_timeout_ns)


def main(args=None) -> int:
    """Run the analyzer node (console script ``analyzer``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(AnalyzerNode, 'wrench_analyzer', args)


if __name__ == '__main__':
    sys.exit(main())
