"""A sample the middleware refuses ends no process: nodes without diagnostics count it, the player exits 1.

rclpy raises ``RCLError`` (a ``RuntimeError``) when the middleware refuses a sample (Fast DDS,
ros2/rclcpp#827); it cannot be provoked on demand, so the tests make a publisher's publish raise
rclpy's message. The managed nodes' reports are in test_inproc_distributor.py and
test_inproc_analyzer.py.
"""
import ast
from pathlib import Path
import subprocess
import sys

from geometry_msgs.msg import PoseArray, WrenchStamped
import numpy as np
import pytest
import rclpy
from rclpy.serialization import deserialize_message

import bag_fixtures as F
from inproc import REFUSAL, ros_context
from ros_harness import domain_id_for, REPO, ros_env
from wrench_distribution.bag.player import BagPlayer
from wrench_distribution.bag.reader import BagReader
from wrench_distribution.ros.delivery import refusal, RefusedSamples

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

PACKAGE = Path(REPO) / 'wrench_distribution'
SENSOR, POSES = '/a/ft_sensor', '/contact_poses'
#: A small bag: 5 F/T readings and 3 contact poses, 1 ms apart in bag time.
READINGS, POSE_STAMPS = 5, 3


def refusing(message):
    """Raise as rclpy's publish does on a refused sample."""
    raise RuntimeError(REFUSAL)


def recording(into: list, publish):
    """Return a publish that records its message, then publishes."""
    def recorded(message):
        into.append(message)
        publish(message)
    return recorded


def small_bag(path: Path) -> Path:
    writer = F.BagWriter(path)
    for k in range(READINGS):
        writer.add(SENSOR, F.WS, 1_000_000_000 + k * 1_000_000,
                   F.wrench_msg(1_000_000_000 + k * 1_000_000, 'a_sensor', [k, 0, 0, 0, 0, 0]))
    for k in range(POSE_STAMPS):
        writer.add(POSES, F.PA, 1_000_500_000 + k * 1_000_000,
                   F.pose_array_msg(1_000_500_000 + k * 1_000_000, 'object', np.array([[k, 0, 0, 0, 0, 0, 1.0]])))
    return writer.close()


def test_refusal_names_the_topic_and_raises_once_the_context_is_shut_down():
    with ros_context() as context:
        node = rclpy.create_node('delivery_probe', context=context)
        publisher = node.create_publisher(WrenchStamped, 'left/wrench_command', 10)
        sent = []
        publisher.publish = recording(sent, publisher.publish)
        message = WrenchStamped()
        assert refusal(publisher, message, context) is None
        assert sent == [message]
        publisher.publish = refusing
        assert refusal(publisher, message, context) == \
            '/left/wrench_command: the middleware refused the sample (Failed to publish: cannot publish data)'
        samples = RefusedSamples(node)
        assert samples.publish(publisher, message) is False
        assert samples.publish(publisher, message) is False
        other = node.create_publisher(WrenchStamped, 'right/wrench_command', 10)
        other.publish = refusing
        assert samples.publish(other, message) is False
        assert samples.counts == {'/left/wrench_command': 2, '/right/wrench_command': 1}
        assert samples.summary() == \
            '3 samples refused by the middleware: /left/wrench_command (2), /right/wrench_command (1)'
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        with pytest.raises(RuntimeError, match='cannot publish data'):
            refusal(publisher, message, context)
        with pytest.raises(RuntimeError, match='cannot publish data'):
            samples.publish(other, message)


def test_the_player_plays_every_other_message_past_a_refused_topic(tmp_path):
    bag = small_bag(tmp_path / 'bag')
    with ros_context() as context, BagReader(bag) as reader:
        player = BagPlayer(reader, rate=100.0, context=context)
        poses: list = []
        player.pubs[POSES].publish = recording(poses, player.pubs[POSES].publish)
        player.pubs[SENSOR].publish = refusing
        assert player.play() == POSE_STAMPS
        player.destroy_node()
    assert player.refused.counts == {SENSOR: READINGS}
    stamps = [deserialize_message(raw, PoseArray).header.stamp for raw in poses]
    assert [(s.sec, s.nanosec) for s in stamps] == [(1, 500_000 + k * 1_000_000) for k in range(POSE_STAMPS)]
    assert [deserialize_message(raw, PoseArray).poses[0].position.x for raw in poses] == [0.0, 1.0, 2.0]


#: The player's command line with one topic's publish refused (rclpy's ``Publisher.publish`` replaced).
REFUSING_PLAYER = """
import sys
from rclpy.publisher import Publisher
from wrench_distribution.bag.player import main
publish = Publisher.publish
def refused(self, message):
    if self.topic_name == sys.argv[2]:
        raise RuntimeError(sys.argv[3])
    return publish(self, message)
Publisher.publish = refused
sys.exit(main([sys.argv[1], '--rate', '100', '--linger', '0']))
"""


@pytest.mark.parametrize('topic, code', [(SENSOR, 1), ('/not_in_the_bag', 0)])
def test_the_player_exits_1_naming_what_the_middleware_refused(tmp_path, topic, code):
    bag = small_bag(tmp_path / 'bag')
    done = subprocess.run([sys.executable, '-c', REFUSING_PLAYER, str(bag), topic, REFUSAL],
                          env=ros_env(domain_id_for()), cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == code, done.stderr[-2000:]
    assert 'Traceback' not in done.stderr
    whole = f'error: {bag} was not played whole: {READINGS} samples refused by the middleware: {SENSOR} ({READINGS})'
    assert (whole in done.stderr) == (code == 1), done.stderr[-2000:]
    played = 'played 3 messages' if code == 1 else f'played {READINGS + POSE_STAMPS} messages'
    assert played in done.stderr, done.stderr[-2000:]


def test_no_module_publishes_around_delivery():
    """A publish outside :mod:`wrench_distribution.ros.delivery` would end its process on a refused sample."""
    offenders = []
    for path in sorted(PACKAGE.rglob('*.py')):
        if path.name == 'delivery.py' and path.parent.name == 'ros':
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'publish'
                    and node.args and not (isinstance(node.func.value, ast.Attribute)
                                           and node.func.value.attr == 'refused')):
                offenders.append(f'{path.relative_to(PACKAGE)}:{node.lineno}')
    assert not offenders, f'publish through ManagedNode.deliver or RefusedSamples: {offenders}'
