"""Distributor node: desired object wrench -> one wrench command per effector.

Subscribes ``desired_wrench`` (WrenchStamped, object frame, about the CoM), the contact
poses (``contact_poses`` PoseArray, static parameters, or tf2) and ``internal_load``
(Float64MultiArray); publishes ``<effector>/wrench_command``, ``/diagnostics`` and
``~/markers``. All the math is done by the core's ``LoadDistributor``, built once per
contact configuration.
"""
import math
import sys
import time
from typing import List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from wrench_distribution.core import UnrealisableWrenchError, WrenchDistributionError
from wrench_distribution.params import (DISTRIBUTOR_PARAMS, ConfigError, build_core_objects,
                                        parse_handles, validate_params)
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.ros.contacts import DistributorCache
from wrench_distribution.ros.conversions import (fill_wrench, make_internal_load_msg,
                                                 make_wrench_stamped, parse_internal_load_msg)
from wrench_distribution.ros.diagnostics import ERROR, OK, STALE, WARN, DiagnosticsState
from wrench_distribution.ros.friction import FrictionStage
from wrench_distribution.ros.markers import wrench_markers
from wrench_distribution.ros.parameters import checked_changes, declare_and_validate
from wrench_distribution.ros.prescription import InternalLoadPrescription
from wrench_distribution.ros.qos import qos_from_name, reliable_qos
from wrench_distribution.ros.runner import run_node

_ZERO6 = [0.0] * 6
_SPECS = {s.name: s for s in DISTRIBUTOR_PARAMS}


class DistributorNode(Node):
    """The ``wrench_distributor`` node.

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.node.Node``.
    :raises ConfigError: on invalid parameters (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_distributor', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        cfg = declare_and_validate(self, DISTRIBUTOR_PARAMS, 'distributor')
        try:
            _, obj, opts = build_core_objects(cfg)
        except ValueError as e:
            raise ConfigError(f'invalid configuration: {e}') from None
        self._cfg = cfg
        effs: List[str] = cfg['effectors']
        self._n = len(effs)
        self._object_frame = cfg['object_frame']
        self._use_object_frame = cfg['command_frame'] == 'object'
        self._negate = cfg['command_sign'] == -1
        contact_frames = cfg['contact_frames'] or [f'{e}_contact' for e in effs]
        self._diag = DiagnosticsState(f'{self.get_name()}: distribution', self.get_name())
        self._prescription = InternalLoadPrescription()
        if cfg['internal_load']:
            self._prescription.set_coords(cfg['internal_load'])
        elif cfg['internal_load_handles']:
            self._prescription.set_handles(parse_handles(cfg['internal_load_handles']))
        self._lambda: Optional[np.ndarray] = None
        self._lambda_error: Optional[str] = None
        self._internal: Optional[np.ndarray] = None
        self._w = np.zeros(6)
        self._cache = DistributorCache(effs, cfg['contact_types'] or ['rigid'] * self._n, obj,
                                       opts, cfg['contact_pose_tolerance'])
        self._friction = FrictionStage(cfg, cfg['friction_mode'])
        self._cache.contact_extras = self._friction.extras
        self._friction_pub = self.create_publisher(
            Float64MultiArray, cfg['friction_load_topic'], 10) if (
                cfg['friction_load_topic'] and cfg['friction_mode'] == 'auto') else None
        depth = cfg['qos_depth']
        out_qos = qos_from_name(cfg['output_qos'], depth)
        topics = cfg['command_topics'] or [f'{e}/wrench_command' for e in effs]
        self._pubs = [self.create_publisher(WrenchStamped, t, out_qos) for t in topics]
        self._msgs = [make_wrench_stamped(self._object_frame if self._use_object_frame else f)
                      for f in contact_frames]
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._marker_period = cfg['markers_period']
        self._last_marker = 0.0
        self._publish_markers = cfg['publish_markers']
        self._marker_scale = cfg['marker_scale']
        self._timeout_ns = int(cfg['input_timeout'] * 1e9)
        self._on_timeout = cfg['on_timeout']
        self._last_input_ns: Optional[int] = None
        self._timed_out = False
        self._last_output_state = 'waiting for desired_wrench'
        self._clock = self.get_clock()
        # resolve a parameter prescription against the first solver
        self._contacts = ContactInput(self, cfg, self._cache, self._diag, self._on_rebuild)
        if self._cache.distributor is not None:
            self._on_rebuild()
            if self._lambda_error:
                raise ConfigError(f"parameter 'internal_load'/'internal_load_handles': "
                                  f'{self._lambda_error}')
        self.create_subscription(WrenchStamped, cfg['desired_wrench_topic'], self._on_wrench,
                                 qos_from_name(cfg['input_qos'], depth))
        self.create_subscription(Float64MultiArray, cfg['internal_load_topic'],
                                 self._on_internal_load, reliable_qos(10))
        self.create_timer(1.0 / cfg['watchdog_rate'], self._on_watchdog)
        self.create_timer(cfg['diagnostics_period'], self._publish_diagnostics)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.get_logger().info(
            f'distributing to {", ".join(effs)} on {", ".join(topics)} '
            f'(commands in the {cfg["command_frame"]} frame, contacts from '
            f'{cfg["contact_source"]})')

    # -- internal load --------------------------------------------------------------
    def _on_rebuild(self) -> None:
        dist = self._cache.distributor
        try:
            self._lambda = self._prescription.resolve(dist)
            self._lambda_error = None
        except ValueError as e:
            self._lambda = None
            self._lambda_error = f'internal load prescription does not fit the basis: {e}'
            self._diag.problem('rejected_internal_load', self._lambda_error, ERROR)
            self.get_logger().error(self._lambda_error, throttle_duration_sec=2.0)
        self._refresh_fast()

    def _refresh_fast(self) -> None:
        """Precompute the internal load's stacked wrench for the per-message fast path."""
        dist = self._cache.distributor
        self._internal = None
        if dist is not None and self._lambda_error is None and self._lambda is not None:
            self._internal = dist.internal_wrench(self._lambda, self._use_object_frame)

    def _on_internal_load(self, msg: Float64MultiArray) -> None:
        names, values = parse_internal_load_msg(msg)
        cand = InternalLoadPrescription()
        if not np.all(np.isfinite(values)):
            return self._reject_internal_load('internal_load message contains NaN or Inf')
        dist = self._cache.distributor
        if names is not None and (dist is None or names != list(dist.basis_names)):
            if len(names) != values.size:
                return self._reject_internal_load(
                    f'internal_load message has {values.size} values but {len(names)} labels')
            cand.set_handles(dict(zip(names, values.tolist())))
        else:
            cand.set_coords(values)
        if dist is not None:
            try:
                lam = cand.resolve(dist)
            except ValueError as e:
                return self._reject_internal_load(f'internal_load message rejected: {e}')
            self._lambda, self._lambda_error = lam, None
        self._prescription = cand
        self._refresh_fast()

    def _reject_internal_load(self, why: str) -> None:
        self._diag.problem('rejected_internal_load', why, WARN)
        self.get_logger().warning(why, throttle_duration_sec=2.0)

    # -- the per-message path -----------------------------------------------------------
    def _on_wrench(self, msg: WrenchStamped) -> None:
        w = msg.wrench
        f = w.force
        t = w.torque
        vals = (f.x, f.y, f.z, t.x, t.y, t.z)
        if not (math.isfinite(vals[0]) and math.isfinite(vals[1]) and math.isfinite(vals[2])
                and math.isfinite(vals[3]) and math.isfinite(vals[4])
                and math.isfinite(vals[5])):
            return self._reject('rejected_nan', 'desired_wrench contains NaN or Inf', ERROR)
        fid = msg.header.frame_id
        if fid and fid != self._object_frame:
            return self._reject('rejected_frame', f"desired_wrench frame '{fid}' is not the "
                                f"object frame '{self._object_frame}'", ERROR)
        now = self._clock.now().nanoseconds
        why = self._contacts.ready(now)
        if why is not None:
            return self._reject('no_contacts', f'no command: {why}', ERROR)
        if self._lambda_error is not None:
            return self._reject('rejected_internal_load', self._lambda_error, ERROR)
        w = self._w
        w[0], w[1], w[2], w[3], w[4], w[5] = vals
        try:
            out = self._cache.distributor.wrench_commands(
                w, self._internal, self._use_object_frame, check_finite=False)  # checked above
        except WrenchDistributionError as e:
            key = 'unrealisable' if isinstance(e, UnrealisableWrenchError) else 'rejected'
            return self._reject(key, f'no command: {e}', ERROR)
        if self._friction.active:
            out = self._friction_step(w, out)
            if out is None:
                return
        if self._negate:
            out = -out
        if not np.isfinite(out).all():
            return self._reject('rejected_nan', 'solver returned NaN or Inf; no command', ERROR)
        self._last_input_ns = now
        self._timed_out = False
        stamp = msg.header.stamp
        for m, row, pub in zip(self._msgs, out.tolist(), self._pubs):
            m.header.stamp = stamp
            fill_wrench(m.wrench, row)
            pub.publish(m)
        self._diag.count('commands_published')
        if self._publish_markers:
            mono = time.monotonic()
            if mono - self._last_marker >= self._marker_period:
                self._last_marker = mono
                self._publish_marker(stamp, vals)

    def _friction_step(self, w: np.ndarray, out: np.ndarray) -> Optional[np.ndarray]:
        """Friction check / auto load (ros/friction.py); the fallback when infeasible."""
        dist = self._cache.distributor
        result = self._friction.apply(dist, w, self._lambda, out, self._use_object_frame)
        if result is None:
            self._reject('friction_infeasible', f'friction: {self._friction.infeasible}', ERROR)
            return self._friction.fallback()
        if self._friction_pub is not None and self._friction.added is not None:
            msg = make_internal_load_msg(dist.basis_names)
            msg.data = self._friction.added.tolist()
            self._friction_pub.publish(msg)
        return result

    def _publish_marker(self, stamp, vals) -> None:
        lam = self._lambda
        added = self._friction.added
        if added is not None and lam is not None and self._friction.options.mode == 'auto':
            lam = lam + added
        try:
            syn = self._cache.distributor.synthesize(vals, lam)
        except WrenchDistributionError:
            return
        self._marker_pub.publish(wrench_markers(
            self._object_frame, stamp, self._cache.positions, syn.wrench_object, vals,
            self._cfg['object_com'], self._marker_scale, self._cache.names,
            colors=self._friction.colors()))

    def _reject(self, key: str, why: str, level: int) -> None:
        self._diag.problem(key, why, level)
        self.get_logger().warning(why, throttle_duration_sec=2.0)

    # -- watchdog --------------------------------------------------------------------------
    def _on_watchdog(self) -> None:
        if self._timeout_ns <= 0 or self._last_input_ns is None:
            return
        now = self._clock.now()
        if now.nanoseconds - self._last_input_ns <= self._timeout_ns:
            return
        if not self._timed_out:
            self._timed_out = True
            self._diag.count('timeouts')
            self.get_logger().warning(
                f'desired_wrench timed out (> {self._timeout_ns * 1e-9:g} s): '
                + ('publishing zero wrenches' if self._on_timeout == 'zero'
                   else 'stopped publishing'))
        if self._on_timeout == 'zero':
            stamp = now.to_msg()
            for m, pub in zip(self._msgs, self._pubs):
                m.header.stamp = stamp
                fill_wrench(m.wrench, _ZERO6)
                pub.publish(m)

    # -- diagnostics --------------------------------------------------------------------
    def _publish_diagnostics(self) -> None:
        now = self._clock.now()
        cond = []
        why = self._contacts.ready(now.nanoseconds)
        if why is not None:
            cond.append((ERROR, why))
        if self._lambda_error:
            cond.append((ERROR, self._lambda_error))
        if self._timed_out:
            cond.append((STALE, 'input timeout: ' + ('publishing zero wrenches'
                                                     if self._on_timeout == 'zero'
                                                     else 'stopped publishing')))
        elif self._last_input_ns is None:
            cond.append((OK, 'waiting for desired_wrench'))
        friction = self._friction.condition() if self._friction.active else None
        if friction is not None:
            cond.append(friction)
        values = {'state': 'timeout' if self._timed_out else
                  ('waiting' if self._last_input_ns is None else 'running'),
                  'on_timeout': self._on_timeout,
                  'internal_load_prescription': self._prescription.describe()}
        if self._last_input_ns is not None:
            values['input_age_s'] = f'{(now.nanoseconds - self._last_input_ns) * 1e-9:.3f}'
        dist = self._cache.distributor
        if dist is not None:
            values['regime'] = dist.regime.name
            values['regime_reasons'] = ', '.join(dist.regime.reasons)
            values['basis'] = ';'.join(dist.basis_names)
            values['virtual_masses'] = ', '.join(f'{m:.6g}' for m in dist.virtual_masses)
            if self._lambda is not None:
                values['internal_load'] = ', '.join(f'{x:.6g}' for x in self._lambda)
        values.update(self._friction.values())
        self._diag_pub.publish(self._diag.build(now.to_msg(), cond, values))

    # -- runtime parameters --------------------------------------------------------------
    def _on_set_parameters(self, params) -> SetParametersResult:
        reason, new, touched = checked_changes(params, _SPECS, self._cfg)
        if reason is not None:
            return SetParametersResult(successful=False, reason=reason)
        # the latest internal-load setting wins at runtime
        if 'internal_load' in touched and new['internal_load']:
            new['internal_load_handles'] = []
        elif 'internal_load_handles' in touched and new['internal_load_handles']:
            new['internal_load'] = []
        try:
            validate_params('distributor', new)
            prescription = self._prescription
            if touched & {'internal_load', 'internal_load_handles'}:
                prescription = InternalLoadPrescription()
                if new['internal_load']:
                    prescription.set_coords(new['internal_load'])
                elif new['internal_load_handles']:
                    prescription.set_handles(parse_handles(new['internal_load_handles']))
            options = None
            dist = self._cache.distributor
            if 'torque_share' in touched:
                _, _, options = build_core_objects(new)
                if dist is not None:
                    dist = self._cache.try_options(options)
            lam = prescription.resolve(dist) if dist is not None else None
        except ValueError as e:  # ConfigError and core errors
            return SetParametersResult(successful=False, reason=str(e))
        # accepted: apply
        if options is not None:
            self._cache.options = options
            if dist is not None:
                self._cache.distributor = dist
        self._prescription = prescription
        if dist is not None:
            self._lambda, self._lambda_error = lam, None
        self._refresh_fast()
        self._cfg = new
        self._timeout_ns = int(new['input_timeout'] * 1e9)
        self._on_timeout = new['on_timeout']
        self._publish_markers = new['publish_markers']
        self._marker_scale = new['marker_scale']
        self._contacts.timeout = new['contact_timeout']
        return SetParametersResult(successful=True)


def main(args=None) -> int:
    """Run the distributor node (console script ``distributor``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(DistributorNode, 'wrench_distributor', args)


if __name__ == '__main__':
    sys.exit(main())
