"""Distributor node: desired object wrench -> one wrench command per effector.

Subscribes ``desired_wrench`` (WrenchStamped, object frame, about the CoM), the contact
poses (``contact_poses`` PoseArray, static parameters, or tf2), ``internal_load``
(Float64MultiArray) and, with ``internal_load_feedback``, the measured internal load;
publishes ``<effector>/wrench_command``, ``/diagnostics`` and ``~/markers``. Everything
between a message and its commands is the ROS-free
:class:`~wrench_distribution.engine.distribution.DistributionEngine`. A managed node
(:mod:`~wrench_distribution.ros.managed`): it commands only while active.
"""
import sys
import time
from typing import Optional, Sequence

from builtin_interfaces.msg import Time as TimeMsg
from geometry_msgs.msg import WrenchStamped
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from wrench_distribution.config import changed_config, ConfigError, DISTRIBUTOR_PARAMS
from wrench_distribution.config.check import warn_findings
from wrench_distribution.config.safety import OPT_IN
from wrench_distribution.core.codec import encode_wrench_payload, LabelledPayloads, ns_to_seconds, ns_to_stamp
from wrench_distribution.core.messages import parse_internal_load_msg, parse_measurement_msg
from wrench_distribution.engine.distribution import CONCERNS, DistributionEngine
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.ros.conversions import (make_internal_load_msg, MalformedPayload,
                                                 read_wrench_payload)
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, SimClockMonitor,
                                                 start_steady_timers, WARN)
from wrench_distribution.ros.friction import parse_friction_message
from wrench_distribution.ros.managed import CONFIGURED, LIFECYCLE, ManagedNode
from wrench_distribution.ros.markers import wrench_markers
from wrench_distribution.ros.node_clock import NodeClock
from wrench_distribution.ros.parameters import declare_config, requested_changes
from wrench_distribution.ros.qos import qos_from_name, reliable_qos
from wrench_distribution.ros.readers import QuietOutputs
from wrench_distribution.ros.runner import run_node

_SPECS = {s.name: s for s in DISTRIBUTOR_PARAMS}


class DistributorNode(ManagedNode):
    """The ``wrench_distributor`` node, a managed node (:mod:`~wrench_distribution.ros.managed`).

    It commands only while active; deactivate publishes the engine's stop first
    (:meth:`~wrench_distribution.engine.distribution.DistributionEngine.stop`).

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.lifecycle.LifecycleNode``.
    :raises ConfigError: on invalid parameters with ``autostart`` (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_distributor', **kwargs) -> None:
        super().__init__(node_name, 'distributor', 'distribution', **kwargs)
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._now_ns = NodeClock(self._ros_clock).now_ns  # the message path's reading
        self._sim_clock = SimClockMonitor()
        self._measurement_listener = self.when_active(self.take_measurement)
        self._feedback_subscription = None
        self.start()

    def _configure(self) -> None:
        """Read and check the parameters, build the engine, make the outputs and inputs."""
        config = self._config = declare_config(self, DISTRIBUTOR_PARAMS, 'distributor', self._given)
        self._engine = engine = DistributionEngine(config)
        warn_findings(self.get_logger().warning, sys.argv)  # check-config, both sections
        for line in engine.safety_conditions():
            self.get_logger().warning(line[1])
        self._diag = DiagnosticsState(f'{self.get_name()}: distribution', self.get_name(),
                                      (*CONCERNS, LIFECYCLE), self.get_logger())
        topics = config.topics
        self._friction_pub = self.create_lifecycle_publisher(
            Float64MultiArray, topics.friction_load, 10) if topics.friction_load else None
        self._create_outputs(config)
        weight = config.settings.weight
        holds = weight.enabled or config.settings.input.on_timeout == 'hold_object_weight'
        self._contacts = ContactInput(self, config, self._diag, self._on_contacts,
                                      engine.offer_orientation, weight.frame if holds else '',
                                      lambda: engine.contact_weights == 0.0)
        self._started = False  # a static prescription the solver rejects: ConfigError
        self._contacts.start()
        self._started = True
        self._create_inputs(config)
        # watchdog, diagnostics and the drop summary run on the steady clock: they keep
        # running under use_sim_time when no /clock arrives
        steady = start_steady_timers(self, config.ros, self._publish_diagnostics,
                                     self._log_drop_summary)
        self.create_timer(ns_to_seconds(config.ros.watchdog_period_ns), self._on_watchdog,
                          clock=steady)
        self.get_logger().info(
            f'distributing to {", ".join(config.effectors)} on {", ".join(topics.commands)} '
            f'(commands in the {"object" if config.settings.output.object_axes else "contact"} '
            f'frame, contacts from {config.contact_source})')

    def _create_outputs(self, config) -> None:
        """Command and marker publishers (lifecycle publishers: silent until activate)."""
        out_qos = qos_from_name(config.ros.output_qos, config.ros.qos_depth)
        self._pubs = [self.create_lifecycle_publisher(WrenchStamped, t, out_qos)
                      for t in config.topics.commands]
        self._quiet = QuietOutputs(zip(config.topics.commands, self._pubs))
        self._marker_pub = self.create_lifecycle_publisher(MarkerArray, '~/markers', 1)
        topic = config.topics.actual_weights  # the weights in force, labelled with every effector
        self._weights_pub = self.create_lifecycle_publisher(
            Float64MultiArray, topic, reliable_qos(10)) if topic else None
        self._weights_sent: Optional[list] = None
        self._weights_payloads = LabelledPayloads(config.effectors)  # published raw, as the commands

    def _stop(self) -> str:
        """Publish the engine's stop commands (deactivate, shutdown); return what they were."""
        stop = self._engine.stop()
        self._publish(stop.commands, self._ros_clock.now().nanoseconds)
        self._diag.count(stop.key)
        self._await_delivery(self._pubs)
        return stop.message

    def _resume(self) -> None:
        self._engine.resume(time.monotonic_ns(), self._ros_clock.now().nanoseconds)

    def _create_inputs(self, config) -> None:
        """Subscribe the desired wrench, the prescription and the two feedback measurements."""
        topics, gate = config.topics, self.when_active  # inputs act only while active
        in_qos = qos_from_name(config.ros.input_qos, config.ros.qos_depth)
        self.create_subscription(WrenchStamped, topics.desired_wrench, gate(self._on_wrench),
                                 in_qos, raw=True)  # decoded here (read_wrench_payload)
        self.create_subscription(Float64MultiArray, topics.internal_load,
                                 gate(self._on_internal_load), reliable_qos(10))
        if topics.contact_weights:
            self.create_subscription(Float64MultiArray, topics.contact_weights,
                                     gate(self._on_contact_weights), reliable_qos(10))
        self._feedback_subscription = self.create_subscription(
            Float64MultiArray, topics.feedback, gate(self._on_measured), in_qos)
        if config.settings.friction.mode == 'auto':  # the friction feedback's input
            self.create_subscription(Float64MultiArray, topics.friction_feedback,
                                     gate(self._on_friction), in_qos)

    # -- inputs ---------------------------------------------------------------------------
    def _on_contacts(self, positions, quaternions) -> Optional[str]:
        """Hand the latest contact poses to the engine; return why they were refused, or None."""
        update = self._engine.offer_contacts(positions, quaternions, time.monotonic_ns())
        if update.rebuilt:
            self._diag.count('solver_builds')
            if update.basis is not None:  # else followed at the next diagnostics
                self._diag.basis(update.basis)
            if not self._started and update.refusal is not None:  # a static prescription
                raise ConfigError("parameter 'internal_load'/'internal_load_handles': "
                                  f'{update.refusal.message}')
        self._report(update.refusal)
        return None if update.rebuilt or update.refusal is None else update.refusal.message

    def _report(self, refusal) -> None:
        if refusal is not None and refusal.report:
            self._diag.problem(refusal.key, refusal.message, refusal.level, refusal.concern)

    def _on_internal_load(self, msg: Float64MultiArray) -> None:
        # the parameters keep what was set through them; the diagnostics show the
        # prescription in force and its source (a node never writes its own parameters)
        self._report(self._engine.offer_internal_load(*parse_internal_load_msg(msg)))

    def _on_contact_weights(self, msg: Float64MultiArray) -> None:
        # targets for the ramp, checked before they move; the parameter keeps what was set
        # through it (the diagnostics show the targets in force and their source)
        self._report(self._engine.offer_weights(*parse_internal_load_msg(msg)))

    def _publish_weights(self, always: bool = False) -> None:
        """Publish the actual contact weights when they changed (or ``always``)."""
        weights = self._engine.contact_weights.tolist()
        if self._weights_pub is None or (weights == self._weights_sent and not always):
            return
        self.deliver(self._weights_pub, self._weights_payloads.encode(weights, None))  # labelled with every effector
        self._weights_sent = weights

    def _on_measured(self, msg: Float64MultiArray) -> None:
        self.take_measurement(*parse_measurement_msg(msg))

    def take_measurement(self, names: Optional[Sequence[str]], values,
                         health: Optional[str] = None, stamp_ns: Optional[int] = None) -> None:
        """Take a measured internal load for the feedback, as from ``feedback_topic``.

        Taken also while the loop is open: the feedback status shows it (tuning step 1).

        :param names: the basis labels of the values (None: unlabelled, refused).
        :param values: the coordinates.
        :param health: the read-out's health label (None: none; ``core.doubt``).
        :param stamp_ns: the read-out's sample stamp, known in the analyzer's process (None:
            not known, as from the topic, whose message has no header).
        """
        self._report(self._engine.offer_measurement(names, values, time.monotonic_ns(),
                                                    self._now_ns(), health, stamp_ns))

    def take_measurements_from(self, analyzer) -> bool:
        """Take the measured internal load from an analyzer node of this process directly.

        Only when the analyzer publishes it where this node listens (its internal-load topic
        is this node's ``feedback_topic``, both resolved): the subscription is then dropped,
        and each of the analyzer's samples reaches :meth:`take_measurement` within the
        analyzer's callback, with no message in between. Other subscribers still get the
        analyzer's messages.

        Both nodes must be configured; call it again after either is configured again (it
        connects what configure made anew, and nothing twice). The measurements are taken
        only while this node is active, as from the subscription.

        :param analyzer: an ``AnalyzerNode`` in this process.
        :return: True when connected, False when the topics differ (the subscription stays).
        """
        if not (self.lifecycle_state in CONFIGURED and analyzer.lifecycle_state in CONFIGURED):
            return False
        subscription = self._feedback_subscription
        if subscription is not None:
            if analyzer.internal_load_topic != subscription.topic_name:
                return False
            self.destroy_subscription(subscription)
            self._feedback_subscription = None
        analyzer.add_internal_load_listener(self._measurement_listener)
        return True

    def _on_friction(self, msg: Float64MultiArray) -> None:
        self._report(self._engine.offer_friction(*parse_friction_message(msg),
                                                 time.monotonic_ns(), self._now_ns()))

    # -- the per-message path -----------------------------------------------------------
    def _on_wrench(self, payload: bytes) -> None:
        try:
            stamp_ns, frame_id, wrench = read_wrench_payload(payload)
        except MalformedPayload as e:
            self._diag.drop('desired_wrench', 'malformed', f'desired wrench is {e}; dropped',
                            ERROR, 'input', 'rejected_malformed')
            return
        now = self._now_ns()
        outcome = self._engine.step(stamp_ns, wrench, now, time.monotonic_ns(), frame_id,
                                    self._contacts.problem(now, self._engine.has_solver),
                                    self._marker_pub.get_subscription_count() > 0)
        if outcome.commands is not None:  # first: the effectors wait for them, the rest does not
            self._publish(outcome.commands, stamp_ns)
        if outcome.is_drop:
            self._diag.drop('desired_wrench', outcome.cause, outcome.message, outcome.level,
                            outcome.concern, outcome.key)
        elif outcome.cause is not None:
            self._diag.problem(outcome.key, outcome.message, outcome.level, outcome.concern)
        self._publish_weights()
        if outcome.commands is None:
            return
        self._diag.count('commands_published')
        if self._friction_pub is not None and outcome.friction_load is not None:
            load = outcome.friction_load
            out = make_internal_load_msg(load.basis)
            out.data = load.values
            self.deliver(self._friction_pub, out)
        if outcome.markers is not None:
            m = outcome.markers
            self.deliver(self._marker_pub, wrench_markers(
                self._config.object_frame, ns_to_stamp(stamp_ns, TimeMsg), m.positions,
                m.wrenches, m.resultant, m.com, m.scale, m.names, colors=m.colors))

    def _publish(self, out, stamp_ns: int) -> None:
        # raw CDR: the input's stamp kept, no message to fill or convert (core.codec)
        for frame, row, pub in zip(self._config.command_frames, out.tolist(), self._pubs):
            self.deliver(pub, encode_wrench_payload(stamp_ns, frame, row))

    # -- watchdog (steady clock) ---------------------------------------------------------
    def _on_watchdog(self) -> None:
        now_ros = self._ros_clock.now().nanoseconds
        self._sim_clock.tick(now_ros, self._use_sim_time())
        if not self.is_active:  # no input is taken: nothing times out
            return
        tick = self._engine.tick(time.monotonic_ns(), now_ros)
        if tick.key:
            self._diag.count(tick.key)
            self.get_logger().warning(tick.message)
        if tick.commands is not None:
            self._publish(tick.commands, self._ros_clock.now().nanoseconds)

    def _use_sim_time(self) -> bool:
        return bool(self.get_parameter('use_sim_time').value)

    def _log_drop_summary(self) -> None:
        line = self._diag.drop_summary()
        if line is not None:
            self.get_logger().warning(
                f'{line} (last {ns_to_seconds(self._config.ros.summary_period_ns):g} s)')

    # -- diagnostics --------------------------------------------------------------------

    def _publish_diagnostics(self) -> None:
        now = self._ros_clock.now()
        mono = time.monotonic_ns()
        report = self._engine.report(mono)
        if self._engine.has_solver:
            self._diag.basis(self._engine.basis_names)
        cond = report.conditions
        why = self._contacts.problem(now.nanoseconds, self._engine.has_solver)
        if why is not None:
            cond['contacts'].append((ERROR, why))
        clock = self._sim_clock.problem()
        if clock is not None:
            cond['clock'].append(clock)
        quiet, episodes = self._quiet.quiet(mono, self._config.ros.no_subscriber_grace_ns)
        if episodes:
            self._diag.count('no_subscriber', episodes)
        if quiet:
            grace = ns_to_seconds(self._config.ros.no_subscriber_grace_ns)
            cond['outputs'].append((WARN, f'no subscriber for > no_subscriber_grace {grace:g} s: '
                                    + ', '.join(quiet)))
        self._diag.counters.update(report.counters)
        self._diag.counters.update(self._refused.counters)
        values, per = report.values, report.per_concern
        per['limits'].update(self._refused.values())
        sim = str(self._use_sim_time()).lower()
        values['use_sim_time'] = sim
        per['clock'] = {'use_sim_time': sim, 'node_clock_s': f'{now.nanoseconds * 1e-9:.3f}'}
        self._lifecycle_diagnostics(cond, per)
        self.deliver(self._diag_pub, self._diag.build(now.to_msg(), cond, values, per))
        self._publish_weights(always=True)

    # -- runtime parameters --------------------------------------------------------------
    def _check_parameters(self, params) -> tuple:
        """On-set callback body: validate a request without changing the node.

        :param params: the requested parameters.
        :return: ``(reason or None, plan)``; the plan is what :meth:`_apply_parameters` needs.
        """
        try:
            change = changed_config(self._config, requested_changes(params, _SPECS))
            plan = self._engine.plan(change)
        except ValueError as e:  # ConfigError, UnsafeChangeError and core errors: named by the shell
            return e, None
        if change.less_safe:
            self.get_logger().warning(f'{OPT_IN}: accepting less safe change(s) '
                                      f'{"; ".join(change.less_safe)}')
        return None, plan

    def _apply_parameters(self, plan) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        self._engine.adopt(plan, time.monotonic_ns())
        self._config = plan.change.config
        self._contacts.set_timeouts(self._config.contact_timeout_ns)


def main(args=None) -> int:
    """Run the distributor node (console script ``distributor``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(DistributorNode, 'wrench_distributor', args)


if __name__ == '__main__':
    sys.exit(main())
