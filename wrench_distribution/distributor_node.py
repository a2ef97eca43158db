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

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import Float64MultiArray
from visualization_msgs.msg import MarkerArray

from wrench_distribution.core import UnrealisableWrenchError, WrenchDistributionError
from wrench_distribution.core.codec import same_frame
from wrench_distribution.core.limits import CommandLimits
from wrench_distribution.engine.cache import DistributorCache
from wrench_distribution.params import (build_core_objects, ConfigError, DISTRIBUTOR_PARAMS,
                                        load_distributor_config, parse_handles,
                                        per_effector_limits, validate_params)
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.ros.conversions import (fill_wrench, make_internal_load_msg,
                                                 make_wrench_stamped, parse_internal_load_msg,
                                                 stamp_to_ns)
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, OK, SimClockMonitor,
                                                 STALE, start_steady_timers)
from wrench_distribution.ros.friction import FrictionStage
from wrench_distribution.ros.markers import wrench_markers
from wrench_distribution.ros.parameters import (add_parameter_callbacks, checked_changes,
                                                declare_and_validate, typed_parameter)
from wrench_distribution.ros.prescription import InternalLoadPrescription
from wrench_distribution.ros.qos import qos_from_name, reliable_qos
from wrench_distribution.ros.runner import run_node

_ZERO6 = [0.0] * 6
_SPECS = {s.name: s for s in DISTRIBUTOR_PARAMS}
_CONCERNS = ('input', 'contacts', 'internal load', 'solver', 'limits', 'clock', 'friction')
_IL_PARAMS = ('internal_load', 'internal_load_handles')


def limits_from(cfg: dict) -> CommandLimits:
    """Return the command limits of a validated configuration.

    :param cfg: validated distributor parameters.
    :return: the limits.
    """
    n = len(cfg['effectors'])
    return CommandLimits(list(cfg['effectors']), per_effector_limits(cfg['force_limits'], n),
                         per_effector_limits(cfg['torque_limits'], n),
                         cfg['desired_force_limit'], cfg['desired_torque_limit'],
                         cfg['internal_load_limit'], cfg['on_limit'])


class DistributorNode(Node):
    """The ``wrench_distributor`` node.

    :param node_name: node name.
    :param kwargs: passed to ``rclpy.node.Node``.
    :raises ConfigError: on invalid parameters (message names the parameter).
    """

    def __init__(self, node_name: str = 'wrench_distributor', **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        cfg = declare_and_validate(self, DISTRIBUTOR_PARAMS, 'distributor')
        typed = load_distributor_config(cfg)  # the core objects; ConfigError naming the cause
        self._cfg = cfg
        effs: List[str] = cfg['effectors']
        self._n = len(effs)
        self._object_frame = cfg['object_frame']
        self._use_object_frame = cfg['command_frame'] == 'object'
        self._negate = cfg['command_sign'] == -1
        contact_frames = typed.contact_frames
        self._diag = DiagnosticsState(f'{self.get_name()}: distribution', self.get_name(),
                                      _CONCERNS, self.get_logger())
        self._limits = limits_from(cfg)
        self._prescription = self._prescription_of(cfg)
        self._il_source = 'parameter' if self._prescription.kind != 'none' else 'none'
        self._init_runtime_state()
        self._friction = FrictionStage(cfg, cfg['friction_mode'])
        self._cache = DistributorCache(effs, typed.contact_types, typed.object_model,
                                       typed.options, typed.contact_pose_tolerance,
                                       contact_extras=self._friction.extras)
        self._friction_pub = self.create_publisher(
            Float64MultiArray, cfg['friction_load_topic'], 10) if (
                cfg['friction_load_topic'] and cfg['friction_mode'] == 'auto') else None
        depth = cfg['qos_depth']
        topics = self._create_outputs(cfg, typed.topics['commands'], contact_frames)
        self._init_watchdog(cfg)
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
        # watchdog, diagnostics and the drop summary run on the steady clock: they keep
        # running under use_sim_time when no /clock arrives
        steady = start_steady_timers(self, cfg['diagnostics_period'], self._publish_diagnostics,
                                     cfg['summary_period'], self._log_drop_summary)
        self.create_timer(1.0 / cfg['watchdog_rate'], self._on_watchdog, clock=steady)
        add_parameter_callbacks(self, _SPECS, self._check_parameters, self._apply_parameters)
        self.get_logger().info(
            f'distributing to {", ".join(effs)} on {", ".join(topics)} '
            f'(commands in the {cfg["command_frame"]} frame, contacts from '
            f'{cfg["contact_source"]})')

    def _init_runtime_state(self) -> None:
        """State of the per-message path before the first message."""
        self._lambda: Optional[np.ndarray] = None
        self._lambda_error: Optional[str] = None
        self._internal: Optional[np.ndarray] = None
        self._w = np.zeros(6)
        self._last_out: Optional[np.ndarray] = None
        self._limit_state: Optional[str] = None
        self._param_sync: List[Parameter] = []
        self._syncing = False

    def _init_watchdog(self, cfg: dict) -> None:
        """Input timeout, future-stamp limit and the clocks they are measured on."""
        self._timeout_ns = int(cfg['input_timeout'] * 1e9)
        self._future_ns = int(cfg['max_future'] * 1e9)
        self._on_timeout = cfg['on_timeout']
        self._last_input_ns: Optional[int] = None  # steady clock
        self._last_input_ros_ns = 0  # node clock
        self._timed_out = False
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._sim_clock = SimClockMonitor()

    def _create_outputs(self, cfg: dict, topics: List[str], contact_frames: List[str]) -> list:
        """Command, diagnostics and marker publishers; return the command topics."""
        out_qos = qos_from_name(cfg['output_qos'], cfg['qos_depth'])
        self._pubs = [self.create_publisher(WrenchStamped, t, out_qos) for t in topics]
        self._msgs = [make_wrench_stamped(self._object_frame if self._use_object_frame else f)
                      for f in contact_frames]
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self._marker_period = cfg['markers_period']
        self._last_marker = 0.0
        self._publish_markers = cfg['publish_markers']
        self._marker_scale = cfg['marker_scale']
        return topics

    # -- internal load --------------------------------------------------------------
    def _internal_problem(self, dist, lam: Optional[np.ndarray],
                          limits: Optional[CommandLimits] = None) -> Optional[str]:
        """Why a resolved internal load cannot be used (limit, or commands over a limit).

        :param limits: the limits to check against (None: the node's current ones).
        """
        if lam is None:
            return None
        limits = self._limits if limits is None else limits
        why = limits.check_internal_load(lam)
        if why is not None:
            return why
        alone = dist.internal_wrench(lam, self._use_object_frame).reshape(self._n, 6)
        v = limits.check_commands(alone)
        return None if v is None else f'internal load alone exceeds the command limits: {v.text}'

    def _resolve(self, prescription: InternalLoadPrescription, dist,
                 limits: Optional[CommandLimits] = None) -> Optional[np.ndarray]:
        """Resolve a prescription and check it against the limits (None: the current ones).

        :raises ValueError: with the reason when it does not fit or is over a limit.
        """
        lam = prescription.resolve(dist)
        why = self._internal_problem(dist, lam, limits)
        if why is not None:
            raise ValueError(why)
        return lam

    def _on_rebuild(self) -> None:
        dist = self._cache.distributor
        self._diag.basis(dist.basis_names)
        try:
            self._lambda = self._resolve(self._prescription, dist)
            self._lambda_error = None
        except ValueError as e:
            self._lambda = None
            self._lambda_error = f'internal load prescription rejected: {e}'
            self._diag.problem('rejected_internal_load', self._lambda_error, ERROR)
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
        why = self._limits.check_internal_load(values)
        if why is not None:
            return self._reject_internal_load(f'internal_load message rejected: {why}')
        if dist is not None:
            try:
                lam = self._resolve(cand, dist)
            except ValueError as e:
                return self._reject_internal_load(f'internal_load message rejected: {e}')
            self._lambda, self._lambda_error = lam, None
        self._prescription = cand
        self._il_source = 'topic'
        self._refresh_fast()
        self._mirror_prescription(cand)

    def _mirror_prescription(self, p: InternalLoadPrescription) -> None:
        """Make the parameters show a prescription that came by topic."""
        coords = p.coords.tolist() if p.kind == 'coords' else []
        handles = [f'{k}={v!r}' for k, v in p.handles.items()] if p.kind == 'handles' else []
        self._syncing = True
        try:
            self.set_parameters([typed_parameter(_SPECS['internal_load'], coords),
                                 typed_parameter(_SPECS['internal_load_handles'], handles)])
        finally:
            self._syncing = False

    def _reject_internal_load(self, why: str) -> None:
        self._diag.problem('rejected_internal_load', why, ERROR)

    # -- the per-message path -----------------------------------------------------------
    def _on_wrench(self, msg: WrenchStamped) -> None:
        w = msg.wrench
        f = w.force
        t = w.torque
        vals = (f.x, f.y, f.z, t.x, t.y, t.z)
        if not (math.isfinite(vals[0]) and math.isfinite(vals[1]) and math.isfinite(vals[2])
                and math.isfinite(vals[3]) and math.isfinite(vals[4])
                and math.isfinite(vals[5])):
            return self._drop('nan', 'desired_wrench contains NaN or Inf', 'rejected_nan')
        fid = msg.header.frame_id
        if fid and not same_frame(fid, self._object_frame):
            return self._drop('frame', f"desired_wrench frame '{fid}' is not the object "
                              f"frame '{self._object_frame}'", 'rejected_frame')
        now = self._ros_clock.now().nanoseconds
        if self._future_ns > 0 and now > 0:
            ahead = stamp_to_ns(msg.header.stamp) - now
            if ahead > self._future_ns:
                return self._drop('future', f'desired_wrench stamp is {ahead * 1e-9:.3f} s '
                                  f'ahead of the node clock (> max_future)', 'rejected_future')
        why = self._contacts.ready(now)
        if why is not None:
            return self._drop('no_contacts', f'no command: {why}', 'no_contacts', 'contacts')
        if self._lambda_error is not None:
            return self._drop('internal_load', self._lambda_error, 'rejected_internal_load',
                              'internal load')
        out = self._commands(vals)
        if out is None:
            return
        self._last_input_ns = time.monotonic_ns()
        self._last_input_ros_ns = now
        self._timed_out = False
        self._publish(out, msg.header.stamp)
        self._diag.count('commands_published')
        if self._publish_markers and self._limit_state is None:
            mono = time.monotonic()
            if mono - self._last_marker >= self._marker_period:
                self._last_marker = mono
                self._publish_marker(msg.header.stamp, vals)

    def _commands(self, vals) -> Optional[np.ndarray]:
        """Commands for a finite desired wrench, inside every limit, or None (reported)."""
        lim = self._limits
        w = self._w
        w[0], w[1], w[2], w[3], w[4], w[5] = vals
        internal = self._internal
        over = lim.check_desired(vals)
        if over is not None and lim.policy == 'scale':
            w *= over.scale  # the whole set scales: manipulating and internal parts alike
            if internal is not None:
                internal = internal * over.scale
        elif over is not None:
            return self._limit_hit(over.text, None)
        try:
            out = self._cache.distributor.wrench_commands(
                w, internal, self._use_object_frame, check_finite=False)  # checked above
        except WrenchDistributionError as e:
            cause = 'unrealisable' if isinstance(e, UnrealisableWrenchError) else 'rejected'
            return self._drop(cause, f'no command: {e}', cause, 'solver')
        if self._friction.active:
            out = self._friction_step(w, out)
            if out is None:
                return None
        if self._negate:
            out = -out
        if not np.isfinite(out).all():
            return self._drop('solver_nan', 'solver returned NaN or Inf; no command',
                              'rejected_nan', 'solver')
        v = lim.check_commands(out)
        if v is None and over is None:
            self._limit_state = None
            self._last_out = out
            return out
        if v is not None and lim.policy != 'scale':
            return self._limit_hit(v.text, None)
        scale = over.scale if over is not None else 1.0
        if v is not None:
            out = out * v.scale
            scale *= v.scale
        text = '; '.join(x.text for x in (over, v) if x is not None)
        return self._limit_hit(text, out, scale)

    def _limit_hit(self, text: str, scaled: Optional[np.ndarray],
                   scale: float = 1.0) -> Optional[np.ndarray]:
        """Apply on_limit after a violation: report it (ERROR, figures) and say what was sent."""
        policy = self._limits.policy
        if policy == 'scale':
            action = f'whole command set scaled by {scale:.6g}'
            out = scaled
        elif policy == 'zero':
            action = 'zero wrenches published'
            out = np.zeros((self._n, 6))
        elif self._last_out is not None:
            action = 'last valid commands held'
            out = self._last_out
        else:
            action = 'no valid command yet: nothing published'
            out = None
        self._limit_state = f'{text} (on_limit={policy}: {action})'
        self._diag.drop('desired_wrench', 'limit', f'limit exceeded: {self._limit_state}',
                        ERROR, 'limits')
        if out is not None and not self._limits.within(out):  # cannot happen; never publish
            return None
        return out

    def _publish(self, out: np.ndarray, stamp) -> None:
        for m, row, pub in zip(self._msgs, out.tolist(), self._pubs):
            m.header.stamp = stamp
            fill_wrench(m.wrench, row)
            pub.publish(m)

    def _friction_step(self, w: np.ndarray, out: np.ndarray) -> Optional[np.ndarray]:
        """Friction check / auto load (ros/friction.py); the fallback when infeasible."""
        dist = self._cache.distributor
        result = self._friction.apply(dist, w, self._lambda, out, self._use_object_frame)
        if result is None:
            self._diag.problem('friction_infeasible', f'friction: {self._friction.infeasible}',
                               ERROR, 'friction')
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

    def _drop(self, cause: str, why: str, legacy_key: str, concern: str = 'input') -> None:
        self._diag.drop('desired_wrench', cause, why, ERROR, concern, legacy_key)

    # -- watchdog (steady clock) ---------------------------------------------------------
    def _on_watchdog(self) -> None:
        self._flush_param_sync()
        now_ros = self._ros_clock.now().nanoseconds
        self._sim_clock.tick(now_ros, self._use_sim_time())
        if self._timeout_ns <= 0 or self._last_input_ns is None:
            return
        # the steady clock always advances; the node clock also counts (a fast replay)
        if (time.monotonic_ns() - self._last_input_ns <= self._timeout_ns
                and now_ros - self._last_input_ros_ns <= self._timeout_ns):
            return
        if not self._timed_out:
            self._timed_out = True
            self._diag.count('timeouts')
            self.get_logger().warning(
                f'desired_wrench timed out (> {self._timeout_ns * 1e-9:g} s): '
                + ('publishing zero wrenches' if self._on_timeout == 'zero'
                   else 'stopped publishing'))
        if self._on_timeout == 'zero':
            self._publish(np.zeros((self._n, 6)), self._ros_clock.now().to_msg())

    def _use_sim_time(self) -> bool:
        return bool(self.get_parameter('use_sim_time').value)

    def _log_drop_summary(self) -> None:
        line = self._diag.drop_summary()
        if line is not None:
            self.get_logger().warning(f'{line} (last {self._cfg["summary_period"]:g} s)')

    # -- diagnostics --------------------------------------------------------------------
    def _conditions(self, now_ns: int) -> dict:
        cond: dict = {c: [] for c in _CONCERNS}
        why = self._contacts.ready(now_ns)
        if why is not None:
            cond['contacts'].append((ERROR, why))
        if self._lambda_error:
            cond['internal load'].append((ERROR, self._lambda_error))
        if self._timed_out:
            cond['input'].append((STALE, 'input timeout: ' + (
                'publishing zero wrenches' if self._on_timeout == 'zero'
                else 'stopped publishing')))
        elif self._last_input_ns is None:
            cond['input'].append((OK, 'waiting for desired_wrench'))
        if self._limit_state is not None:
            cond['limits'].append((ERROR, f'last desired wrench over a limit: '
                                          f'{self._limit_state}'))
        clock = self._sim_clock.problem()
        if clock is not None:
            cond['clock'].append(clock)
        friction = self._friction.condition() if self._friction.active else None
        if friction is not None:
            cond['friction'].append(friction)
        return cond

    def _publish_diagnostics(self) -> None:
        now = self._ros_clock.now()
        cond = self._conditions(now.nanoseconds)
        lim = self._limits
        values = {'state': 'timeout' if self._timed_out else
                  ('waiting' if self._last_input_ns is None else 'running'),
                  'on_timeout': self._on_timeout,
                  'internal_load_prescription': self._prescription.describe(),
                  'internal_load_source': self._il_source,
                  'on_limit': lim.policy,
                  'use_sim_time': str(self._use_sim_time()).lower()}
        if self._last_input_ns is not None:
            values['input_age_s'] = f'{(time.monotonic_ns() - self._last_input_ns) * 1e-9:.3f}'
        dist = self._cache.distributor
        if dist is not None:
            values['regime'] = dist.regime.name
            values['regime_reasons'] = ', '.join(dist.regime.reasons)
            values['basis'] = ';'.join(dist.basis_names)
            values['virtual_masses'] = ', '.join(f'{m:.6g}' for m in dist.virtual_masses)
            if self._lambda is not None:
                values['internal_load'] = ', '.join(f'{x:.6g}' for x in self._lambda)
        per = {'limits': {'force_limits': ', '.join(f'{x:g}' for x in lim.force),
                          'torque_limits': ', '.join(f'{x:g}' for x in lim.torque),
                          'desired_force_limit': f'{lim.desired_force:g}',
                          'desired_torque_limit': f'{lim.desired_torque:g}',
                          'internal_load_limit': f'{lim.internal_load:g}'},
               'internal load': {'source': self._il_source,
                                 'prescription': self._prescription.describe()},
               'clock': {'use_sim_time': values['use_sim_time'],
                         'node_clock_s': f'{now.nanoseconds * 1e-9:.3f}'}}
        values.update(self._friction.values())
        self._diag_pub.publish(self._diag.build(now.to_msg(), cond, values, per))

    # -- runtime parameters --------------------------------------------------------------
    def _check_parameters(self, params) -> tuple:
        """On-set callback body: validate a request without changing the node.

        :param params: the requested parameters.
        :return: ``(reason or None, plan)``; the plan is what :meth:`_apply` needs.
        """
        reason, new, touched = checked_changes(params, _SPECS, self._cfg)
        if reason is not None:
            return reason, None
        if self._syncing:  # the parameters catching up with a topic prescription
            return None, {'new': new, 'sync': True}
        # the latest internal-load setting wins; clearing one clears the prescription
        il = touched & set(_IL_PARAMS)
        if il:
            other = ({'internal_load_handles'} if 'internal_load' in il else
                     {'internal_load'}) - il
            for name in other:
                new[name] = []
        try:
            validate_params('distributor', new)
            limits = limits_from(new)
            prescription = self._prescription_of(new) if il else self._prescription
            options = None
            dist = self._cache.distributor
            if 'torque_share' in touched:
                _, _, options = build_core_objects(new)
                if dist is not None:
                    dist = self._cache.try_options(options)
            lam = self._resolve(prescription, dist, limits) if dist is not None else None
        except ValueError as e:  # ConfigError and core errors
            return str(e), None
        return None, {'new': new, 'limits': limits, 'prescription': prescription,
                      'options': options, 'dist': dist, 'lam': lam, 'il': il}

    @staticmethod
    def _prescription_of(cfg: dict) -> InternalLoadPrescription:
        """Return the internal-load prescription the parameters ask for (may be none)."""
        prescription = InternalLoadPrescription()
        if cfg['internal_load']:
            prescription.set_coords(cfg['internal_load'])
        elif cfg['internal_load_handles']:
            prescription.set_handles(parse_handles(cfg['internal_load_handles']))
        return prescription

    def _apply_parameters(self, plan: dict) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        new = plan['new']
        if plan.get('sync'):
            self._cfg = new
            return
        options, dist, limits, il = plan['options'], plan['dist'], plan['limits'], plan['il']
        if options is not None:
            self._cache.adopt_options(options, dist)
        self._limits = limits
        self._prescription = plan['prescription']
        if il:
            self._il_source = 'parameter' if self._prescription.kind != 'none' else 'none'
            # the other internal-load parameter was cleared in our copy: show it
            for name in {'internal_load', 'internal_load_handles'} - il:
                if self._cfg[name]:
                    self._param_sync.append(typed_parameter(_SPECS[name], []))
        if dist is not None:
            self._lambda, self._lambda_error = plan['lam'], None
        self._refresh_fast()
        self._cfg = new
        self._timeout_ns = int(new['input_timeout'] * 1e9)
        self._future_ns = int(new['max_future'] * 1e9)
        self._on_timeout = new['on_timeout']
        self._publish_markers = new['publish_markers']
        self._marker_scale = new['marker_scale']
        self._contacts.set_timeout(new['contact_timeout'])
        self._last_out = None if self._last_out is None or not limits.within(
            self._last_out) else self._last_out

    def _flush_param_sync(self) -> None:
        """Set parameters queued by the on-set callback (it cannot set them itself)."""
        if not self._param_sync:
            return
        pending, self._param_sync = self._param_sync, []
        self._syncing = True
        try:
            self.set_parameters(pending)
        finally:
            self._syncing = False


def main(args=None) -> int:
    """Run the distributor node (console script ``distributor``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(DistributorNode, 'wrench_distributor', args)


if __name__ == '__main__':
    sys.exit(main())
