"""Analyzer node: n F/T streams -> manipulating and constraint parts, resultant, internal load.

Subscribes one ``WrenchStamped`` F/T topic per effector (``<effector>/ft_sensor``) and
the contact poses (topic, static parameters, or tf2). The n streams are synchronised
by header stamp (``sync_tolerance``, ``max_age``); each complete sample is turned
into contact-frame wrenches by the configured sensor models (pose, sign, tool mass)
and decomposed by the core's ``LoadDistributor.analyze``.
"""
import math
import sys
from typing import List, Optional

from builtin_interfaces.msg import Time as TimeMsg
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
from rclpy.node import Node
from std_msgs.msg import Float64, Float64MultiArray

from wrench_distribution.core import SensorModel, WrenchDistributionError
from wrench_distribution.core.spatial import rotate_inverse
from wrench_distribution.params import (ANALYZER_PARAMS, build_core_objects,
                                        load_analyzer_config, validate_params)
from wrench_distribution.ros.contact_input import ContactInput
from wrench_distribution.engine.cache import DistributorCache
from wrench_distribution.ros.conversions import (fill_wrench, make_internal_load_msg,
                                                 make_wrench_stamped, stamp_to_ns)
from wrench_distribution.ros.diagnostics import (DiagnosticsState, ERROR, OK, SimClockMonitor,
                                                 STALE, start_steady_timers, WARN)
from wrench_distribution.ros.friction import friction_message, FrictionStage
from wrench_distribution.ros.parameters import (add_parameter_callbacks, checked_changes,
                                                declare_and_validate)
from wrench_distribution.ros.qos import qos_from_name
from wrench_distribution.ros.runner import run_node

_SPECS = {s.name: s for s in ANALYZER_PARAMS}
_CONCERNS = ('input', 'contacts', 'solver', 'clock', 'friction')


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
        self._sensors = typed.sensors
        self._cfg = cfg
        effs: List[str] = cfg['effectors']
        self._names = effs
        n = self._n = len(effs)
        self._object_frame = cfg['object_frame']
        self._gravity = np.asarray(cfg['gravity'], float)
        self._use_object_frame = cfg['output_frame'] == 'object'
        contact_frames = typed.contact_frames
        self._diag = DiagnosticsState(f'{self.get_name()}: analysis', self.get_name(),
                                      _CONCERNS, self.get_logger())
        self._ft_frames = cfg['ft_frames'] or [''] * n
        self._friction = FrictionStage(cfg, 'check')
        self._cache = DistributorCache(effs, typed.contact_types, typed.object_model,
                                       typed.options, typed.contact_pose_tolerance,
                                       contact_extras=self._friction.extras)
        self._friction_pub = self.create_publisher(Float64MultiArray, cfg['friction_topic'], 10) \
            if cfg['friction_topic'] and self._friction.active else None
        self._g_contact = np.zeros((n, 3))
        self._raw = np.zeros((n, 6))
        self._stamp_ns: List[Optional[int]] = [None] * n
        self._stamps: List[Optional[TimeMsg]] = [None] * n
        self._fresh = [False] * n
        self._last_skew_s: Optional[float] = None
        self._tol_ns = int(cfg['sync_tolerance'] * 1e9)
        self._max_age_ns = int(cfg['max_age'] * 1e9)
        self._future_ns = int(cfg['max_future'] * 1e9)
        self._last_out_ns: Optional[int] = None
        self._ros_clock = self.get_clock()  # not `_clock`: that name is rclpy's own
        self._sim_clock = SimClockMonitor()
        depth = cfg['qos_depth']
        self._create_outputs(cfg, typed.topics, contact_frames)
        self._contacts = ContactInput(self, cfg, self._cache, self._diag, self._on_rebuild)
        if self._cache.distributor is not None:
            self._on_rebuild()
        if cfg['contact_source'] == 'tf' and cfg['sensor_frames']:
            self._contacts.track_sensor_frames(contact_frames, cfg['sensor_frames'],
                                               self._on_sensor_poses)
        in_qos = qos_from_name(cfg['input_qos'], depth)
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
        out_frames = ([self._object_frame] * len(contact_frames) if self._use_object_frame
                      else contact_frames)
        self._man_pubs = [self.create_publisher(WrenchStamped, t, out_qos)
                          for t in topics['manipulating']]
        self._con_pubs = [self.create_publisher(WrenchStamped, t, out_qos)
                          for t in topics['constraint']]
        self._man_msgs = [make_wrench_stamped(f) for f in out_frames]
        self._con_msgs = [make_wrench_stamped(f) for f in out_frames]
        self._part_outputs = [  # (part, publishers, messages): the internal load's two readings
            (part, [self.create_publisher(WrenchStamped, t, out_qos) for t in topics[part]],
             [make_wrench_stamped(f) for f in out_frames])
            for part in ('internal', 'invariant')]
        self._norm_outputs = [(attr, self.create_publisher(Float64, cfg[f'{attr}_topic'], out_qos))
                              for attr in ('internal_load_norm', 'invariant_norm') if cfg[f'{attr}_topic']]
        self._obj_pub = self.create_publisher(WrenchStamped, cfg['object_wrench_topic'], out_qos)
        self._obj_msg = make_wrench_stamped(self._object_frame)
        self._il_pub = self.create_publisher(Float64MultiArray, cfg['internal_load_topic'],
                                             out_qos)
        self._il_msg = make_internal_load_msg([])
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', 10)

    def _on_rebuild(self) -> None:
        dist = self._cache.distributor
        # gravity in each contact frame: R_i^T g (R_i: contact orientation in the object)
        self._g_contact = rotate_inverse(self._cache.quaternions, self._gravity)
        self._il_msg = make_internal_load_msg(dist.basis_names)
        self._diag.basis(dist.basis_names)

    def _on_sensor_poses(self, pos: np.ndarray, quat: np.ndarray) -> None:
        old = self._sensors
        self._sensors = [SensorModel(position=tuple(p), orientation=tuple(q), sign=s.sign,
                                     tool_mass=s.tool_mass, tool_com=s.tool_com)
                         for p, q, s in zip(pos, quat, old)]

    def _make_cb(self, i: int):
        def cb(msg: WrenchStamped) -> None:
            self._on_ft(i, msg)
        return cb

    # -- the per-message path -----------------------------------------------------------
    def _reading_problem(self, i: int, msg: WrenchStamped, vals) -> Optional[tuple]:
        """``(cause, message)`` when a reading must be dropped, else None."""
        name = self._names[i]
        if not all(math.isfinite(v) for v in vals):
            return 'nan', f"F/T reading of '{name}' contains NaN or Inf; dropped"
        want = self._ft_frames[i]
        if want and msg.header.frame_id != want:
            return 'frame', (f"F/T reading of '{name}' is in frame '{msg.header.frame_id}', "
                             f"expected '{want}' (ft_frames); dropped")
        if self._future_ns > 0:
            now = self._ros_clock.now().nanoseconds
            ahead = stamp_to_ns(msg.header.stamp) - now
            if now > 0 and ahead > self._future_ns:
                return 'future', (f"F/T reading of '{name}' is stamped {ahead * 1e-9:.3f} s "
                                  'ahead of the node clock (> max_future); dropped')
        return None

    def _on_ft(self, i: int, msg: WrenchStamped) -> None:
        f = msg.wrench.force
        t = msg.wrench.torque
        vals = (f.x, f.y, f.z, t.x, t.y, t.z)
        bad = self._reading_problem(i, msg, vals)
        if bad is not None:
            self._diag.drop(self._names[i], bad[0], bad[1], ERROR,
                            legacy_key='rejected_nan' if bad[0] == 'nan' else None)
            return
        if self._fresh[i]:  # the previous reading never joined a sample
            self._diag.drop(self._names[i], 'unsynchronised',
                            f"F/T reading of '{self._names[i]}' replaced before the other "
                            'streams delivered theirs (streams at different rates?)', WARN)
        self._raw[i] = vals
        self._stamps[i] = msg.header.stamp
        self._stamp_ns[i] = stamp_to_ns(msg.header.stamp)
        self._fresh[i] = True
        if all(self._fresh):
            self._on_sample()

    def _on_sample(self) -> None:
        stamps = self._stamp_ns
        lo = min(stamps)
        hi = max(stamps)
        self._last_skew_s = (hi - lo) * 1e-9
        if hi - lo > self._tol_ns:
            k = stamps.index(lo)
            self._diag.drop(self._names[k], 'unsynchronised',
                            f'F/T streams out of sync: skew {self._last_skew_s * 1e3:.1f} ms > '
                            f"sync_tolerance; dropped the reading of '{self._names[k]}'",
                            WARN, legacy_key='skew_drops')
            self._fresh[k] = False
            return
        self._fresh = [False] * self._n
        now = self._ros_clock.now().nanoseconds
        if self._max_age_ns > 0 and now > 0 and now - lo > self._max_age_ns:
            return self._drop_sample('stale', f'F/T sample is stale: {(now - lo) * 1e-9:.3f} s '
                                     'old > max_age; dropped', WARN, 'stale_drops')
        if self._last_out_ns is not None and hi <= self._last_out_ns:
            return self._drop_sample('out_of_order', 'F/T sample stamped '
                                     f'{(self._last_out_ns - hi) * 1e-9:.6f} s before (or at) '
                                     'the last published one; dropped (outputs never go '
                                     'backwards)', WARN)
        self._contacts.at_stamp(hi)
        reason = self._contacts.ready(now)
        if reason is not None:
            return self._drop_sample('no_contacts', f'no analysis: {reason}', ERROR,
                                     'no_contacts', 'contacts')
        try:
            measured = np.stack([s.to_contact(self._raw[j], self._g_contact[j])
                                 for j, s in enumerate(self._sensors)])
            with np.errstate(all='ignore'):  # overflow ends as Inf, refused below
                an = self._cache.distributor.analyze(measured)
        except WrenchDistributionError as e:
            return self._drop_sample('rejected', f'no analysis: {e}', ERROR, 'rejected',
                                     'solver')
        self._publish_analysis(an, stamps.index(hi), hi, measured)

    def _drop_sample(self, cause: str, why: str, level: int, legacy_key: Optional[str] = None,
                     concern: str = 'input') -> None:
        """Count a dropped sample once per effector (each loses one reading)."""
        for k, name in enumerate(self._names):
            self._diag.drop(name, cause, why, level, concern,
                            legacy_key if k == 0 else None)

    def _publish_analysis(self, an, newest: int, hi: int, measured: np.ndarray) -> None:
        if self._use_object_frame:
            man, con = an.manipulating_object, an.constraint_object
        else:
            man, con = an.manipulating_contact, an.constraint_contact
        res = an.resultant
        lam = an.internal_load
        if not (np.isfinite(man).all() and np.isfinite(con).all() and np.isfinite(res).all()
                and np.isfinite(lam).all()):
            return self._drop_sample('solver_nan', 'analysis returned NaN or Inf; no output',
                                     ERROR, 'rejected_nan', 'solver')
        stamp = self._stamps[newest]
        for m, row, pub in zip(self._man_msgs, man.tolist(), self._man_pubs):
            m.header.stamp = stamp
            fill_wrench(m.wrench, row)
            pub.publish(m)
        for m, row, pub in zip(self._con_msgs, con.tolist(), self._con_pubs):
            m.header.stamp = stamp
            fill_wrench(m.wrench, row)
            pub.publish(m)
        self._obj_msg.header.stamp = stamp
        fill_wrench(self._obj_msg.wrench, res.tolist())
        self._obj_pub.publish(self._obj_msg)
        self._il_msg.data = lam.tolist()
        self._il_pub.publish(self._il_msg)
        self._publish_internal_parts(an, stamp)
        self._last_out_ns = hi
        if self._friction.active:
            self._friction.check = self._friction.model(self._cache.distributor).check(measured)
            if self._friction_pub is not None:
                self._friction_pub.publish(friction_message(self._friction.check, self._names))
        self._diag.count('samples_published')

    def _publish_internal_parts(self, an, stamp) -> None:
        """Publish the internal wrench, the invariant (eq. 78) and their norms (docs/theory.md 5)."""
        frame = 'object' if self._use_object_frame else 'contact'
        for part, pubs, msgs in self._part_outputs:
            values = getattr(an, f'{part}_{frame}')
            if not np.isfinite(values).all():
                continue
            for m, row, pub in zip(msgs, values.tolist(), pubs):
                m.header.stamp = stamp
                fill_wrench(m.wrench, row)
                pub.publish(m)
        for attr, pub in self._norm_outputs:
            value = float(getattr(an, attr))
            if math.isfinite(value):
                pub.publish(Float64(data=value))

    # -- diagnostics (steady clock) ------------------------------------------------------
    def _conditions(self, now_ns: int, values: dict) -> dict:
        cond: dict = {c: [] for c in _CONCERNS}
        why = self._contacts.ready(now_ns)
        if why is not None:
            cond['contacts'].append((ERROR, why))
        missing = [n for n, s in zip(self._names, self._stamp_ns) if s is None]
        if missing:
            cond['input'].append((WARN, 'no F/T data yet from: ' + ', '.join(missing)))
        stale = []
        for name, s in zip(self._names, self._stamp_ns):
            if s is None:
                continue
            values[f'age_s.{name}'] = f'{(now_ns - s) * 1e-9:.4f}'
            if self._max_age_ns > 0 and now_ns - s > self._max_age_ns:
                stale.append(name)
        if stale:
            cond['input'].append((STALE, 'stale F/T stream(s): ' + ', '.join(stale)
                                  + f' (older than max_age={self._max_age_ns * 1e-9:g} s)'))
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
        if self._last_skew_s is not None:
            values['skew_s'] = f'{self._last_skew_s:.4f}'
        if self._last_out_ns is not None:
            values['last_output_stamp_s'] = f'{self._last_out_ns * 1e-9:.6f}'
        dist = self._cache.distributor
        if dist is not None:
            values['regime'] = dist.regime.name
            values['regime_reasons'] = ', '.join(dist.regime.reasons)
            values['basis'] = ';'.join(dist.basis_names)
        friction = self._friction.condition() if self._friction.active else None
        if friction is not None:
            cond['friction'].append(friction)
        values.update(self._friction.values())
        self._diag_pub.publish(self._diag.build(now.to_msg(), cond, values))

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
                if self._cache.distributor is not None:
                    dist = self._cache.try_options(options)
        except ValueError as e:
            return str(e), None
        return None, (new, options, dist)

    def _apply_parameters(self, plan: tuple) -> None:
        """Post-set callback body: apply an accepted change (every check passed)."""
        new, options, dist = plan
        if options is not None:
            self._cache.adopt_options(options, dist)
            if dist is not None:
                self._on_rebuild()  # the basis may change with the options
        self._cfg = new
        self._tol_ns = int(new['sync_tolerance'] * 1e9)
        self._max_age_ns = int(new['max_age'] * 1e9)
        self._future_ns = int(new['max_future'] * 1e9)
        self._contacts.set_timeout(new['contact_timeout'])


def main(args=None) -> int:
    """Run the analyzer node (console script ``analyzer``).

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: process exit code (2 on invalid configuration).
    """
    return run_node(AnalyzerNode, 'wrench_analyzer', args)


if __name__ == '__main__':
    sys.exit(main())
