"""ROS node ``object_sim``: the held object, its effectors and their F/T sensors, on sim time.

Subscribes ``<effector>/wrench_command`` (WrenchStamped, contact frame about the contact
point, the wrench the effector applies to the object). Publishes ``/clock``,
``object_pose`` (PoseStamped, world frame: pose of the object frame), ``object_twist``
(TwistStamped, world axes: velocity of the object-frame origin and angular velocity),
``contact_poses`` (PoseArray, object frame), ``<effector>/ft_sensor`` (WrenchStamped,
sensor frame ``<effector>_ft_sensor``), ``~/markers`` (MarkerArray, world frame) and, for
arms with joints, ``joint_arms/status`` (Float64MultiArray; the effector model's ``status``,
:mod:`..scenarios.models`). The truth,
in its own namespace (:mod:`..scenarios.truth`): ``~/truth/<effector>/wrench`` (WrenchStamped, frame
``<effector>_true_contact``: what the effector applies at its true contact),
``~/truth/object_wrench`` (their sum, object axes about the true centre of mass),
``~/truth/internal_load`` (the believed basis, labelled as the analyzer's) and, when the true
geometry differs, ``~/truth/internal_load_true_contacts``.

The node is the clock source: it paces the physics against the wall clock
(``real_time_factor``; 0 runs as fast as it can) and every other node runs with
``use_sim_time:=true``. It first publishes at sim time 0 with the object held in a
fixture until every effector has sent a command (and each F/T topic has
``wait_for_subscribers`` subscribers), then starts the clock; the fixture is released at
``release_time``. With ``duration > 0`` it exits after that much sim time.
"""
from __future__ import annotations

import sys
import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, PoseArray, PoseStamped, TwistStamped, WrenchStamped
import numpy as np
import rclpy
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from wrench_distribution.config.sensor_faults import parse_faults
from wrench_distribution.config.sim import SIM_PARAMS
from wrench_distribution.core.codec import join_labels, ns_to_stamp, seconds_to_ns, split_labels, stamp_to_ns
from wrench_distribution.core.messages import fill_pose, fill_vector, fill_wrench, wrench_to_array
from wrench_distribution.core.spatial import matrix_to_quaternion as quaternion_from_matrix
from wrench_distribution.ros.conversions import make_internal_load_msg, make_wrench_stamped
from wrench_distribution.ros.delivery import RefusedSamples
from wrench_distribution.ros.parameters import declare_and_validate
from wrench_distribution.ros.runner import stop_requested

from ..control.admittance import accepts_reference
from ..control.object_controller import shift_profile, tilt_profile
from ..physics.sensor_faults import FaultyStreams
from ..scenarios.models import effector_model
from ..scenarios.sections import build_sim
from ..scenarios.truth import TruthReadout

#: Parameters of the node only (the rest of SIM_DEFAULTS describes the physics).
EXTRA = ('wait_for_subscribers', 'contact_rate', 'marker_rate', 'lockstep', 'lockstep_timeout')


def _stamp(t: float) -> Time:
    return ns_to_stamp(seconds_to_ns(t), Time)


class ObjectSimNode(Node):
    """The simulator node; :meth:`tick` advances one publish period."""

    def __init__(self) -> None:
        super().__init__('object_sim')
        #: The samples the middleware refused, per topic (logged; the run goes on).
        self.refused = RefusedSamples(self)
        self.p, _ = declare_and_validate(self, SIM_PARAMS, 'object_sim')
        self.extra = {k: self.p[k] for k in EXTRA}
        self.effectors = list(self.p['effectors'])
        self.n = len(self.effectors)
        self.sim = build_sim(self.p)
        #: The effector model's entry (:mod:`..scenarios.models`): what the node does with it.
        self.model = effector_model(self.p)
        self.sensors = self.sim.sensors
        self.faults = FaultyStreams(parse_faults(self.p['sensor_faults'], self.effectors), self.n)
        self.dropped_references = np.zeros(len(self.p['effectors']), dtype=int)
        self.dt = 1.0 / float(self.p['physics_rate'])
        self.substeps = max(1, int(round(self.p['physics_rate'] / self.p['publish_rate'])))
        self.period = self.substeps * self.dt
        self.commands = np.zeros((self.n, 6))
        self.command_time = np.full(self.n, -np.inf)
        self.received = np.zeros(self.n, dtype=bool)
        self.command_stamp = np.full(self.n, -1, dtype=np.int64)
        self.published_stamp = -1
        self.ticks = 0
        self.lockstep_misses = 0
        self.started = False
        self.world = self.p['world_frame']
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.clock_pub = self.create_publisher(Clock, '/clock', reliable)
        self.pose_pub = self.create_publisher(PoseStamped, 'object_pose', reliable)
        self.twist_pub = self.create_publisher(TwistStamped, 'object_twist', reliable)
        self.contacts_pub = self.create_publisher(PoseArray, 'contact_poses', reliable)
        self.marker_pub = self.create_publisher(MarkerArray, '~/markers', 1)
        self.ft_pubs = [self.create_publisher(WrenchStamped, f'{e}/ft_sensor', reliable)
                        for e in self.effectors]
        self.slip_pub = self.create_publisher(Float64MultiArray, 'contact_slip', reliable) \
            if np.isfinite(self.sim.mu).any() else None
        self.status_pub = None if self.model.status is None else self.create_publisher(
            Float64MultiArray, self.model.status[0], reliable)
        self._truth_publishers(reliable)
        for i, e in enumerate(self.effectors):
            self.create_subscription(WrenchStamped, f'{e}/wrench_command',
                                     lambda msg, i=i: self._on_command(i, msg), reliable)
        self.ft_msgs = [WrenchStamped() for _ in self.effectors]
        for e, m in zip(self.effectors, self.ft_msgs):
            m.header.frame_id = f'{e}_ft_sensor'
        self.contacts_msg = PoseArray()
        self.contacts_msg.header.frame_id = self.p['object_frame']
        for r, rot in zip(self.sim.r, self.sim.r_rot):
            self.contacts_msg.poses.append(fill_pose(Pose(), r, quaternion_from_matrix(rot)))
        self.next_contacts = 0.0
        self.initial_contacts = self.sim.r.copy()
        self.next_markers = 0.0
        self.wall_start = time.monotonic()
        self.get_logger().info(
            f'{self.n} effectors, physics {self.p["physics_rate"]:g} Hz, publishing '
            f'{1.0 / self.period:g} Hz; waiting for commands on '
            + ', '.join(f'{e}/wrench_command' for e in self.effectors))

    def _truth_publishers(self, qos: QoSProfile) -> None:
        """Create the truth's publishers and messages (docs/simulator.md, "The truth")."""
        self.truth = TruthReadout(self.p, self.sim.r, self.sim.r_rot)
        self.truth_msgs = [make_wrench_stamped(f'{e}_true_contact') for e in self.effectors]
        self.truth_pubs = [self.create_publisher(WrenchStamped, f'~/truth/{e}/wrench', qos)
                           for e in self.effectors]
        self.truth_resultant = make_wrench_stamped(self.p['object_frame'])
        self.truth_resultant_pub = self.create_publisher(WrenchStamped, '~/truth/object_wrench',
                                                         qos)
        self.truth_loads = []  # (publisher, message) in the believed basis, then the true one
        for topic, names in (('~/truth/internal_load', self.truth.basis_names),
                             ('~/truth/internal_load_true_contacts', self.truth.true_basis_names)):
            if names:
                self.truth_loads.append((self.create_publisher(Float64MultiArray, topic, qos),
                                         make_internal_load_msg(names)))

    def publish_truth(self, stamp: Time, wrenches: np.ndarray) -> None:
        """Publish the true contact wrenches, their resultant and the true internal loads.

        :param stamp: the state's stamp.
        :param wrenches: (n, 6) true contact frames about the true contacts.
        """
        for pub, msg, w in zip(self.truth_pubs, self.truth_msgs, wrenches):
            msg.header.stamp = stamp
            fill_wrench(msg.wrench, w.tolist())
            self.refused.publish(pub, msg)
        self.truth_resultant.header.stamp = stamp
        fill_wrench(self.truth_resultant.wrench, self.truth.resultant(wrenches).tolist())
        self.refused.publish(self.truth_resultant_pub, self.truth_resultant)
        for (pub, msg), values in zip(self.truth_loads, self.truth.internal_loads(wrenches)):
            msg.data = [float(v) for v in values]
            self.refused.publish(pub, msg)

    # --- inputs -----------------------------------------------------------------
    def _on_command(self, i: int, msg: WrenchStamped) -> None:
        values = wrench_to_array(msg.wrench)
        if not np.all(np.isfinite(values)):
            self.get_logger().warning(f'{self.effectors[i]}: non-finite command ignored',
                                      throttle_duration_sec=2.0)
            return
        if self.model.wrench_references and not accepts_reference(
                msg.header.frame_id, f'{self.effectors[i]}_ft_sensor'):
            # as admittance_controller does: a reference in another frame is dropped
            self.dropped_references[i] += 1
            self.get_logger().error(
                f'{self.effectors[i]}: ignoring wrench reference in frame '
                f"'{msg.header.frame_id}'; expected '{self.effectors[i]}_ft_sensor' "
                f'({int(self.dropped_references[i])} dropped)', throttle_duration_sec=2.0)
            return
        self.commands[i] = values
        self.command_time[i] = self.sim.time
        self.command_stamp[i] = stamp_to_ns(msg.header.stamp)
        self.received[i] = True

    def ready(self) -> bool:
        """Tell whether every effector has commanded and the F/T topics have their listeners.

        :return: readiness
        """
        need = int(self.extra['wait_for_subscribers'])
        subscribed = all(p.get_subscription_count() >= need for p in self.ft_pubs)
        return bool(self.received.all()) and subscribed

    # --- one publish period -----------------------------------------------------
    def tick(self) -> None:
        """Advance the physics by one publish period (if started) and publish everything."""
        if self.started and self.grasped():
            stale = (self.sim.time - self.command_time) > self.p['command_timeout']
            commands = np.where(stale[:, None], 0.0, self.commands)
            for _ in range(self.substeps):
                fixed = self.sim.time < self.p['release_time']
                self.sim.step(commands, self.dt, fixed=fixed)
        if self.started:
            self.ticks += 1
            self.sim.set_clock(self.ticks * self.period)
        if self.p['free_tilts'] and not self.grasped():  # the open grippers turn with the fixture
            self.sim.turn_rig(tilt_profile(self.p['free_tilts'], self.sim.time)[0])
        if self.p['contact_shifts']:
            self.shift_contacts()
        self.publish()

    def shift_contacts(self) -> None:
        """Move the contacts along ``contact_shifts``; the contact poses and the truth follow."""
        positions = self.initial_contacts + shift_profile(self.p['contact_shifts'], self.sim.time)
        if np.array_equal(positions, self.sim.r):
            return
        self.sim.move_contacts(positions)
        self.truth = TruthReadout(self.p, self.sim.r, self.sim.r_rot)
        for pose, r in zip(self.contacts_msg.poses, self.sim.r):
            fill_vector(pose.position, r)
        self.next_contacts = 0.0  # published at once

    def grasped(self) -> bool:
        """Tell whether the grippers have closed (``grasp_time``); before, nothing is transmitted."""
        return self.sim.time >= self.p['grasp_time'] - 1e-9

    def publish(self) -> None:
        """Publish clock, twist, pose, F/T readings, and (at their rates) contacts and markers."""
        t = self.ticks * self.period  # exact multiples of the period, no drift
        stamp = _stamp(t)
        self.published_stamp = stamp_to_ns(stamp)
        self.refused.publish(self.clock_pub, Clock(clock=stamp))
        pos, rot = self.sim.object_frame_pose()
        vel, omega = self.sim.object_frame_twist()
        twist = TwistStamped()
        twist.header.stamp, twist.header.frame_id = stamp, self.world
        fill_vector(twist.twist.linear, vel)
        fill_vector(twist.twist.angular, omega)
        self.refused.publish(self.twist_pub, twist)
        pose = PoseStamped()
        pose.header.stamp, pose.header.frame_id = stamp, self.world
        fill_pose(pose.pose, pos, quaternion_from_matrix(rot))
        self.refused.publish(self.pose_pub, pose)
        grasped = self.grasped()
        applied = self.sim.transmitted() if grasped else np.zeros((self.n, 6))
        self.publish_truth(stamp, self.sim.contact_wrenches() if grasped else np.zeros((self.n, 6)))
        frames = self.sim.effector_frames()
        gravity = np.einsum('nji,j->ni', frames, self.sim.gravity)
        readings = self.faults.apply(t, self.sensors.read(applied, gravity))
        for pub, msg, r in zip(self.ft_pubs, self.ft_msgs, readings):
            msg.header.stamp = stamp
            fill_wrench(msg.wrench, r.tolist())
            self.refused.publish(pub, msg)
        if self.slip_pub is not None:
            self.refused.publish(self.slip_pub, self.slip_message())
        if self.status_pub is not None:
            self.refused.publish(self.status_pub, self.status_message())
        if t >= self.next_contacts or not self.started:
            self.contacts_msg.header.stamp = stamp
            self.refused.publish(self.contacts_pub, self.contacts_msg)
            self.next_contacts = t + 1.0 / self.extra['contact_rate']
        if t >= self.next_markers and self.extra['marker_rate'] > 0:
            self.refused.publish(self.marker_pub, self.markers(stamp, applied))
            self.next_markers = t + 1.0 / self.extra['marker_rate']

    def slip_message(self) -> Float64MultiArray:
        """Build the slip state of the effectors as a message.

        Per effector: distance slid along the object (m), time lifted off (s), and 1 once it
        has slid off the object.

        :return: n x 3 array, first dimension labelled with the effector names.
        """
        msg = Float64MultiArray()
        msg.layout.dim = [
            MultiArrayDimension(label=join_labels(self.effectors), size=self.n, stride=3 * self.n),
            MultiArrayDimension(label='slip_distance_m;lifted_time_s;lost', size=3, stride=3)]
        msg.data = np.column_stack([self.sim.slip_distance, self.sim.lifted_time,
                                    self.sim.lost]).reshape(-1).astype(float).tolist()
        return msg

    def status_message(self) -> Float64MultiArray:
        """Build the effector model's status as a message (its entry's column labels).

        :return: n x k array, first dimension labelled with the effector names.
        """
        labels = self.model.status[1]
        width = len(split_labels(labels))
        msg = Float64MultiArray()
        msg.layout.dim = [
            MultiArrayDimension(label=join_labels(self.effectors), size=self.n,
                                stride=width * self.n),
            MultiArrayDimension(label=labels, size=width, stride=width)]
        msg.data = self.sim.status().reshape(-1).astype(float).tolist()
        return msg

    def markers(self, stamp: Time, applied: np.ndarray) -> MarkerArray:
        """Object, effectors and the force each transmits (1 cm per newton), world frame.

        :param stamp: header stamp.
        :param applied: (n, 6) transmitted wrenches, effector frames.
        :return: the markers
        """
        out = MarkerArray()
        pos, rot = self.sim.object_frame_pose()
        box = Marker()
        box.header.stamp, box.header.frame_id = stamp, self.world
        box.ns, box.id, box.type = 'object', 0, Marker.SPHERE
        fill_pose(box.pose, self.sim.body.position, quaternion_from_matrix(rot))
        box.scale.x = box.scale.y = box.scale.z = 0.05
        box.color.r, box.color.g, box.color.b, box.color.a = 0.2, 0.6, 1.0, 0.8
        out.markers.append(box)
        frames = self.sim.effector_frames()
        for i in range(self.n):
            arrow = Marker()
            arrow.header.stamp, arrow.header.frame_id = stamp, self.world
            arrow.ns, arrow.id, arrow.type = 'transmitted_force', i, Marker.ARROW
            start = self.sim.eff_pos[i]
            end = start + 0.01 * frames[i] @ applied[i, :3]
            arrow.points = [fill_vector(Point(), start), fill_vector(Point(), end)]
            arrow.pose.orientation.w = 1.0
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.005, 0.01, 0.01
            arrow.color.r, arrow.color.g, arrow.color.a = 1.0, 0.3, 1.0
            out.markers.append(arrow)
        return out

    def await_commands(self, executor) -> None:
        """Lockstep: serve callbacks until every effector has answered the last published state.

        Commands carry the stamp of the state they answer (controller and distributor copy
        it), so the loop has one publish period of latency in sim time however slowly the
        processes run. Gives up after ``lockstep_timeout`` s of wall time (then the latest
        commands are used and the miss is counted).

        :param executor: executor that has this node.
        """
        deadline = time.monotonic() + float(self.extra['lockstep_timeout'])
        while (self.command_stamp < self.published_stamp).any():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.lockstep_misses += 1
                self.get_logger().warning(
                    f'lockstep: no command for t={self.sim.time:.3f} s within '
                    f'{self.extra["lockstep_timeout"]:g} s ({self.lockstep_misses} misses)',
                    throttle_duration_sec=2.0)
                return
            executor.spin_once(timeout_sec=remaining)

    # --- main loop --------------------------------------------------------------
    def run(self, executor) -> None:
        """Serve callbacks and tick on the wall clock until shutdown or ``duration``.

        :param executor: executor that has this node.
        """
        rtf = float(self.p['real_time_factor'])
        wait_period = 0.05
        deadline = time.monotonic() + float(self.p['start_timeout'])
        next_wall = time.monotonic()
        while rclpy.ok() and not stop_requested():  # SIGINT / SIGTERM end it between ticks
            if not self.started:
                self.publish()
                if self.ready() or time.monotonic() > deadline:
                    if not self.ready():
                        self.get_logger().warning('start_timeout: starting without commands '
                                                  'from every effector')
                    self.started = True
                    self.get_logger().info('all effectors commanding: sim time starts')
                    next_wall = time.monotonic()
                    continue
                end = time.monotonic() + wait_period
                while time.monotonic() < end:
                    executor.spin_once(timeout_sec=max(0.0, end - time.monotonic()))
                continue
            if self.extra['lockstep']:
                self.await_commands(executor)
            self.tick()
            if 0 < self.p['duration'] <= self.sim.time + 1e-9:
                self.get_logger().info(f'duration {self.p["duration"]:g} s reached, exiting')
                return
            if rtf > 0:
                next_wall += self.period / rtf
                now = time.monotonic()
                if next_wall < now - 0.5:  # fell far behind: do not try to catch up
                    next_wall = now
                executor.spin_once(timeout_sec=0.0)
                while True:
                    remaining = next_wall - time.monotonic()
                    if remaining <= 0:
                        break
                    executor.spin_once(timeout_sec=remaining)
            else:
                for _ in range(2 * self.n):
                    executor.spin_once(timeout_sec=0.0)


def main(args=None) -> int:
    """Run the simulator node.

    :param args: ROS command-line arguments (None: ``sys.argv``).
    :return: exit code (2 on invalid configuration).
    """
    from ...ros.runner import run_node
    return run_node(ObjectSimNode, 'object_sim', args, spin=_run,
                    config_errors=(ValueError, TypeError))


def _run(executor, node: ObjectSimNode) -> None:
    """Run the simulation loop; a signal's shutdown mid-loop ends it quietly."""
    try:
        node.run(executor)
    except Exception as e:  # noqa: BLE001 - shutdown by a signal invalidates the context
        if rclpy.ok():
            raise
        print(f'[object_sim] stopped: {e}', file=sys.stderr, flush=True)


if __name__ == '__main__':
    sys.exit(main())
