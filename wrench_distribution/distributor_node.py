"""Distributor node: desired object wrench -> one wrench command per effector.

Subscribes ``desired_wrench`` (WrenchStamped, object frame, about the CoM), the contact
poses (``contact_poses`` PoseArray, static parameters, or tf2), ``internal_load``
(Float64MultiArray) and, with ``internal_load_feedback``, the measured internal load;
publishes ``<effector>/wrench_command``, ``/diagnostics`` and ``~/markers``. Everything
between a message and its commands is the ROS-free
:class:`~wrench_distribution.engine.distribution.DistributionEngine`.
"""
import sys
import time
from typing import Dict, List, Set

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from wrench_distribution.config.check import warn_findings
from wrench_distribution.config.safety import (OPT_IN, RefusedChanges, unsafe_changes_allowed,
                                               UnsafeChangeError)
from wrench_distribution.config.schema import ConfigError, DISTRIBUTOR_PARAMS
from wrench_distribution.config.validation import validate_params
from wrench_distribution.core import WrenchDistributionError
from wrench_distribution.core.codec import seconds_to_ns, stamp_to_ns
from wrench_distribution.core.messages import fill_wrench, parse_internal_load_msg
from wrench_distribution.engine.distribution import CONCERNS, DistributionEngine
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.ros.conversions import make_internal_load_msg, make_wrench_stamped
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, SimClockMonitor,
                                                 start_steady_timers, WARN)
from wrench_distribution.ros.friction import parse_friction_message
from wrench_distribution.ros.markers import wrench_markers
from wrench_distribution.ros.parameters import (add_parameter_callbacks, checked_changes,
                                                declare_and_validate, param_value_of)
from wrench_distribution.ros.qos import qos_from_name, reliable_qos
from wrench_distribution.ros.runner import run_node

_SPECS = {s.name: s for s in DISTRIBUTOR_PARAMS}
_IL_PARAMS = ('internal_load', 'internal_load_handles')


class DistributorNode(Node):
    """The ``wrench_distributor`` node.

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.node.Node``.
    :raises ConfigError: on invalid parameters (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_distributor', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        cfg = declare_and_validate(self, DISTRIBUTOR_PARAMS, 'distributor')
        self._engine = engine = DistributionEngine(cfg)  # ConfigError naming the cause
        warn_findings(self.get_logger().warning, sys.argv)  # check-config, both sections
        self._cfg = cfg
        self._refused = RefusedChanges()
        for line in self._engine.safety_conditions():
            self.get_logger().warning(line[1])
        self._diag = DiagnosticsState(f'{self.get_name()}: distribution', self.get_name(),
                                      CONCERNS, self.get_logger())
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._sim_clock = SimClockMonitor()
        self._friction_pub = self.create_publisher(
            Float64MultiArray, cfg['friction_load_topic'], 10) if (
                cfg['friction_load_topic'] and cfg['friction_mode'] == 'auto') else None
        topics = self._create_outputs(cfg)
        self._contacts = ContactInput(self, cfg, engine.cache, self._diag, self._on_rebuild,
                                      engine.weight.offer_orientation,
                                      cfg['gravity_frame'] if engine.weight.needs_orientation
                                      else '')
        if engine.cache.distributor is not None:
            self._on_rebuild()
            if engine.lam_error:
                raise ConfigError(f"parameter 'internal_load'/'internal_load_handles': "
                                  f'{engine.lam_error}')
        self.create_subscription(WrenchStamped, cfg['desired_wrench_topic'], self._on_wrench,
                                 qos_from_name(cfg['input_qos'], cfg['qos_depth']))
        self.create_subscription(Float64MultiArray, cfg['internal_load_topic'],
                                 self._on_internal_load, reliable_qos(10))
        self.create_subscription(Float64MultiArray, cfg['feedback_topic'], self._on_measured,
                                 qos_from_name(cfg['input_qos'], cfg['qos_depth']))
        if cfg['friction_mode'] == 'auto':  # the friction feedback's input (docs/force_control.md)
            self.create_subscription(Float64MultiArray, cfg['friction_feedback_topic'],
                                     self._on_friction,
                                     qos_from_name(cfg['input_qos'], cfg['qos_depth']))
        # watchdog, diagnostics and the drop summary run on the steady clock: they keep
        # running under use_sim_time when no /clock arrives
        steady = start_steady_timers(self, cfg['diagnostics_period'], self._publish_diagnostics,
                                     cfg['summary_period'], self._log_drop_summary)
        self.create_timer(1.0 / cfg['watchdog_rate'], self._on_watchdog, clock=steady)
        add_parameter_callbacks(self, _SPECS, self._check_parameters, self._apply_parameters)
        self.get_logger().info(
            f'distributing to {", ".join(engine.names)} on {", ".join(topics)} '
            f'(commands in the {cfg["command_frame"]} frame, contacts from '
            f'{cfg["contact_source"]})')

    def _create_outputs(self, cfg: dict) -> List[str]:
        """Command, diagnostics and marker publishers; return the command topics."""
        typed_topics = self._engine.config.topics['commands']
        out_qos = qos_from_name(cfg['output_qos'], cfg['qos_depth'])
        self._pubs = [self.create_publisher(WrenchStamped, t, out_qos) for t in typed_topics]
        frames = self._engine.config.contact_frames
        self._msgs = [make_wrench_stamped(cfg['object_frame'] if self._engine.object_axes
                                          else f) for f in frames]
        self._quiet_since: Dict[str, int] = {}  # command topic -> steady ns without subscriber
        self._quiet_counted: Set[str] = set()
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._last_marker = 0.0
        self._topics = typed_topics
        return typed_topics

    # -- inputs ---------------------------------------------------------------------------
    def _on_rebuild(self) -> None:
        self._diag.basis(self._engine.cache.distributor.basis_names)
        why = self._engine.rebuilt(time.monotonic_ns())
        if why is not None:
            self._diag.problem('rejected_internal_load', why, ERROR)

    def _on_internal_load(self, msg: Float64MultiArray) -> None:
        # the parameters keep what was set through them; the diagnostics show the
        # prescription in force and its source (a node never writes its own parameters)
        why = self._engine.offer_internal_load(*parse_internal_load_msg(msg))
        if why is not None:
            self._diag.problem('rejected_internal_load', why, ERROR)

    def _on_measured(self, msg: Float64MultiArray) -> None:
        # taken also while the loop is open: the feedback status shows it (tuning step 1)
        names, values = parse_internal_load_msg(msg)
        why = self._engine.offer_measurement(names, values, time.monotonic_ns(),
                                             self._ros_clock.now().nanoseconds)
        if why is not None and self._engine.feedback.enabled:
            self._diag.problem('feedback_rejected', f'internal-load feedback: {why}', WARN,
                               'feedback')

    def _on_friction(self, msg: Float64MultiArray) -> None:
        why = self._engine.friction.offer_measurement(*parse_friction_message(msg),
                                                      time.monotonic_ns(),
                                                      self._ros_clock.now().nanoseconds)
        if why is not None and self._engine.friction.feedback.enabled:
            self._diag.problem('friction_feedback_rejected', f'friction feedback: {why}', WARN,
                               'friction')

    # -- the per-message path -----------------------------------------------------------
    def _on_wrench(self, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        t = msg.wrench.torque
        now = self._ros_clock.now().nanoseconds
        vals = (f.x, f.y, f.z, t.x, t.y, t.z)
        outcome = self._engine.step(stamp_to_ns(msg.header.stamp), vals, now,
                                    time.monotonic_ns(), msg.header.frame_id,
                                    self._contacts.ready(now))
        if outcome.cause == 'friction':
            self._diag.problem('friction_infeasible', outcome.message, ERROR, 'friction')
        elif outcome.cause is not None:
            self._diag.drop('desired_wrench', outcome.cause, outcome.message, ERROR,
                            outcome.concern, outcome.key)
        if outcome.commands is None:
            return
        self._publish(outcome.commands, msg.header.stamp)
        self._diag.count('commands_published')
        added = self._engine.friction.added
        if self._friction_pub is not None and added is not None:
            out = make_internal_load_msg(self._engine.cache.distributor.basis_names)
            out.data = added.tolist()
            self._friction_pub.publish(out)
        if self._cfg['publish_markers'] and outcome.valid:
            mono = time.monotonic()
            if mono - self._last_marker >= self._cfg['markers_period']:
                self._last_marker = mono
                self._publish_marker(msg.header.stamp, vals)

    def _publish(self, out, stamp) -> None:
        for m, row, pub in zip(self._msgs, out.tolist(), self._pubs):
            m.header.stamp = stamp
            fill_wrench(m.wrench, row)
            pub.publish(m)

    def _publish_marker(self, stamp, vals) -> None:
        engine = self._engine
        held = engine.weight.held(vals)  # what the effectors apply (hold_object_weight)
        try:
            syn = engine.cache.distributor.synthesize(held, engine.commanded())
        except WrenchDistributionError:
            return
        self._marker_pub.publish(wrench_markers(
            self._cfg['object_frame'], stamp, engine.cache.positions, syn.wrench_object, held,
            self._cfg['object_com'], self._cfg['marker_scale'], engine.cache.names,
            colors=engine.friction.colors()))

    # -- watchdog (steady clock) ---------------------------------------------------------
    def _on_watchdog(self) -> None:
        now_ros = self._ros_clock.now().nanoseconds
        self._sim_clock.tick(now_ros, self._use_sim_time())
        action = self._engine.watchdog(time.monotonic_ns(), now_ros)
        if action == 'timeout':
            self._diag.count('timeouts')
            self.get_logger().warning(
                f'desired_wrench timed out (> {self._engine.timeout_ns * 1e-9:g} s): '
                + ('publishing zero wrenches' if self._engine.on_timeout == 'zero'
                   else 'stopped publishing'))
            action = self._engine.on_timeout
        if action == 'zero':
            self._publish(self._engine.zeros(), self._ros_clock.now().to_msg())

    def _use_sim_time(self) -> bool:
        return bool(self.get_parameter('use_sim_time').value)

    def _log_drop_summary(self) -> None:
        line = self._diag.drop_summary()
        if line is not None:
            self.get_logger().warning(f'{line} (last {self._cfg["summary_period"]:g} s)')

    # -- diagnostics --------------------------------------------------------------------
    def _quiet_outputs(self, mono_ns: int) -> List[str]:
        """Command topics without a subscriber for longer than ``no_subscriber_grace``.

        Each such episode is counted once (``no_subscriber``); a subscriber ends it.
        """
        grace_ns = seconds_to_ns(self._cfg['no_subscriber_grace'])
        quiet = []
        for topic, pub in zip(self._topics, self._pubs):
            if pub.get_subscription_count() > 0:
                self._quiet_since.pop(topic, None)
                self._quiet_counted.discard(topic)
                continue
            since = self._quiet_since.setdefault(topic, mono_ns)
            if grace_ns > 0 and mono_ns - since > grace_ns:
                if topic not in self._quiet_counted:
                    self._quiet_counted.add(topic)
                    self._diag.count('no_subscriber')
                quiet.append(topic)
        return quiet

    def _conditions(self, now_ns: int) -> dict:
        cond = self._engine.conditions(time.monotonic_ns())
        why = self._contacts.ready(now_ns)
        if why is not None:
            cond['contacts'].append((ERROR, why))
        clock = self._sim_clock.problem()
        if clock is not None:
            cond['clock'].append(clock)
        quiet = self._quiet_outputs(time.monotonic_ns())
        if quiet:
            cond['outputs'].append((WARN, 'no subscriber for > no_subscriber_grace '
                                    f'{self._cfg["no_subscriber_grace"]:g} s: {", ".join(quiet)}'))
        return cond

    def _publish_diagnostics(self) -> None:
        now = self._ros_clock.now()
        cond = self._conditions(now.nanoseconds)
        for key, n in {**self._engine.feedback.counters, **self._refused.counters,
                       **self._engine.friction.feedback.counters}.items():
            self._diag.counters[key] = n
        values, per = self._engine.report(time.monotonic_ns())
        per['limits'].update(self._refused.values())
        sim = str(self._use_sim_time()).lower()
        values['use_sim_time'] = sim
        per['clock'] = {'use_sim_time': sim, 'node_clock_s': f'{now.nanoseconds * 1e-9:.3f}'}
        self._diag_pub.publish(self._diag.build(now.to_msg(), cond, values, per))

    # -- runtime parameters --------------------------------------------------------------
    def _check_parameters(self, params) -> tuple:
        """On-set callback body: validate a request without changing the node.

        :param params: the requested parameters.
        :return: ``(reason or None, plan)``; the plan is what :meth:`_apply` needs.
        """
        reason, plan = self._plan_parameters(params)
        if reason is not None:
            self._refused.note(', '.join(f'{p.name}={param_value_of(p)!r}' for p in params),
                               reason, isinstance(plan, UnsafeChangeError))
            self.get_logger().warning(f'parameter change refused: {reason}',
                                      throttle_duration_sec=1.0)
            return reason, None
        allowed = unsafe_changes_allowed(plan['new'], self._cfg, plan['touched'])
        if allowed:
            self.get_logger().warning(f'{OPT_IN}: accepting less safe change(s) '
                                      f'{"; ".join(allowed)}')
        return None, plan

    def _plan_parameters(self, params) -> tuple:
        """Check a request: ``(None, plan)``, or ``(reason, the error or None)``."""
        reason, new, touched = checked_changes(params, _SPECS, self._cfg)
        if reason is not None:
            return reason, None
        # the latest internal-load setting wins (the other one is cleared in the node's copy
        # only: the diagnostics show which is in force); clearing one clears the prescription
        il = touched & set(_IL_PARAMS)
        for name in ({'internal_load_handles'} if 'internal_load' in il else
                     {'internal_load'} if il else set()) - il:
            new[name] = []
        try:
            validate_params('distributor', new)
            plan = self._engine.plan(new, touched, bool(il))
        except ValueError as e:  # ConfigError, UnsafeChangeError and core errors
            return str(e), e
        return None, dict(plan, touched=touched)

    def _apply_parameters(self, plan: dict) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        self._engine.adopt(plan, time.monotonic_ns())
        self._cfg = plan['new']
        self._contacts.set_timeout(self._cfg['contact_timeout'])


def main(args=None) -> int:
    """Run the distributor node (console script ``distributor``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(DistributorNode, 'wrench_distributor', args)


if __name__ == '__main__':
    sys.exit(main())
