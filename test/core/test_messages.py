"""The one message conversion (core.messages) and time conversion (core.codec), on both kinds of class.

The nodes hand it rclpy's messages, the bag tools and the simulator's reports the classes
rosbags deserialises: the same field names, so one module serves both. Round trips through
either class, and through CDR bytes from one to the other, give the numbers back exactly;
the arrays are the field values in the documented order (read field by field here).
"""
from geometry_msgs.msg import Point, Pose, PoseArray, Transform, Vector3, Wrench
from hypothesis import given, strategies as st
import numpy as np
from rclpy.serialization import serialize_message
from rosbags.typesys import get_typestore, Stores
from std_msgs.msg import Float64MultiArray

from wrench_distribution.bag.reader import default_typestore
from wrench_distribution.core.codec import ns_to_seconds, seconds_to_ns, stamp_to_ns
from wrench_distribution.core.messages import (fill_pose, fill_vector, fill_wrench,
                                               parse_internal_load_msg, pose_array_to_arrays,
                                               pose_to_list, transform_to_list, vector_to_array,
                                               wrench_to_array)
from wrench_distribution.ros.conversions import make_internal_load_msg

finite = st.floats(-1e6, 1e6, allow_nan=False)
six = st.lists(finite, min_size=6, max_size=6)
three = st.lists(finite, min_size=3, max_size=3)
four = st.lists(finite, min_size=4, max_size=4)


@given(values=six)
def test_a_wrench_round_trips_through_rclpy_and_rosbags_classes(values):
    msg = fill_wrench(Wrench(), values)
    assert [msg.force.x, msg.force.y, msg.force.z, msg.torque.x, msg.torque.y,
            msg.torque.z] == values
    assert wrench_to_array(msg).tolist() == values
    out = np.full(6, np.nan)
    assert wrench_to_array(msg, out) is out and out.tolist() == values
    store = default_typestore()
    decoded = store.deserialize_cdr(serialize_message(msg), 'geometry_msgs/msg/Wrench')
    assert wrench_to_array(decoded).tolist() == values


@given(position=three, quaternion=four)
def test_a_pose_round_trips_and_reads_in_the_documented_order(position, quaternion):
    pose = fill_pose(Pose(), position, quaternion)
    p, o = pose.position, pose.orientation
    assert [p.x, p.y, p.z, o.x, o.y, o.z, o.w] == position + quaternion
    assert pose_to_list(pose) == position + quaternion
    decoded = default_typestore().deserialize_cdr(serialize_message(pose), 'geometry_msgs/msg/Pose')
    assert pose_to_list(decoded) == position + quaternion
    transform = Transform()
    fill_vector(transform.translation, position)
    r = transform.rotation
    r.x, r.y, r.z, r.w = quaternion
    assert transform_to_list(transform) == position + quaternion
    assert vector_to_array(fill_vector(Vector3(), position)).tolist() == position
    assert vector_to_array(fill_vector(Point(), position)).tolist() == position


@given(poses=st.lists(st.tuples(three, four), max_size=5))
def test_a_pose_array_gives_one_row_per_pose(poses):
    msg = PoseArray()
    msg.poses = [fill_pose(Pose(), p, q) for p, q in poses]
    positions, quaternions = pose_array_to_arrays(msg)
    assert positions.shape == (len(poses), 3) and quaternions.shape == (len(poses), 4)
    assert positions.tolist() == [p for p, _ in poses]
    assert quaternions.tolist() == [q for _, q in poses]


@given(names=st.lists(st.text('abcdefghij(),', min_size=1, max_size=12), min_size=1,
                      max_size=4),
       data=st.data())
def test_a_labelled_array_gives_its_names_and_values_back(names, data):
    values = data.draw(st.lists(finite, min_size=len(names), max_size=len(names)))
    msg = make_internal_load_msg(names)
    msg.data = values
    got_names, got_values = parse_internal_load_msg(msg)
    assert got_names == [n.strip() for n in names] and got_values.tolist() == values
    decoded = default_typestore().deserialize_cdr(serialize_message(msg),
                                                  'std_msgs/msg/Float64MultiArray')
    assert parse_internal_load_msg(decoded)[0] == got_names
    bare = Float64MultiArray(data=values)
    assert parse_internal_load_msg(bare)[0] is None


@given(sec=st.integers(0, 2 ** 31 - 1), nanosec=st.integers(0, 999_999_999))
def test_seconds_and_nanoseconds_round_trip_to_the_nanosecond(sec, nanosec):
    ns = sec * 1_000_000_000 + nanosec
    assert abs(seconds_to_ns(ns_to_seconds(ns)) - ns) <= 1 + ns * 2.0 ** -50  # a double's digits
    assert seconds_to_ns(ns_to_seconds(nanosec)) == nanosec
    stamp = get_typestore(Stores.ROS2_HUMBLE).types['builtin_interfaces/msg/Time'](sec, nanosec)
    assert stamp_to_ns(stamp) == ns


def test_seconds_round_to_the_nearest_nanosecond():
    """One rounding: a truncation would read 1.001 s as 1000999999 ns (1.001 * 1e9 < 1001000000)."""
    assert int(1.001 * 1e9) == 1_000_999_999
    assert seconds_to_ns(1.001) == 1_001_000_000
    assert seconds_to_ns(0.1) == 100_000_000 and seconds_to_ns(1.5e-9) == 2
    assert seconds_to_ns(-0.25) == -250_000_000
    assert isinstance(seconds_to_ns(2.0), int)
