"""The managed nodes' transitions in this process: what each leaves made, refused, kept.

The transitions are rclpy's own (``trigger_configure``, ...), the ones its ``~/change_state``
service runs; the DDS side (outputs before and after, from another process) is
test/ros/test_lifecycle.py. Here: a transition that raises goes through error processing
back to ``unconfigured`` with an ERROR status and everything released; a cleanup destroys
what configure made and keeps the parameters, runtime changes included, for the next
configure; a parameter change is refused while the node is not configured; a configure that
fails releases what it had made; the calibration file is taken by the first configure that
accepts it, and a configure after cleanup runs with what was taken.
"""
import inspect

import pytest
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
import yaml

from inproc import overrides, ros_context
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ANALYZER_PARAMS, DISTRIBUTOR_PARAMS
from wrench_distribution.distributor_node import DistributorNode
from wrench_distribution.ros.diagnostics import ERROR, OK

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

BASE = {'effectors': ['left', 'right'], 'contact_source': 'static', 'object_frame': 'object',
        'contact_positions': [0.0, 0.3, 0.0, 0.0, -0.3, 0.0], 'autostart': False}
KINDS = {'distributor': (DistributorNode, DISTRIBUTOR_PARAMS),
         'analyzer': (AnalyzerNode, ANALYZER_PARAMS)}


@pytest.fixture(scope='module')
def ctx():
    with ros_context() as c:
        yield c


def make(ctx, kind: str, factory=None, **params):
    cls, specs = KINDS[kind]
    return (factory or cls)(context=ctx, parameter_overrides=overrides(dict(BASE, **params), specs),
                            start_parameter_services=False)


def entities(node) -> set:
    """Return the node's publishers, subscriptions, timers and services, by identity."""
    return {id(e) for group in (node.publishers, node.subscriptions, node.timers, node.services)
            for e in group}


@pytest.mark.parametrize('kind', sorted(KINDS))
def test_cleanup_releases_what_configure_made_and_keeps_the_parameters(ctx, kind):
    node = make(ctx, kind)
    try:
        before = entities(node)
        assert node.lifecycle_state == 'unconfigured'
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        made = entities(node) - before
        assert made and node.lifecycle_state == 'inactive'
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS and node.is_active
        result = node.set_parameters([Parameter('contact_timeout', value=2.5)])[0]
        assert result.successful, result.reason
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        assert not node.is_active
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        assert entities(node) == before  # nothing of the configuration left
        result = node.set_parameters([Parameter('contact_timeout', value=3.0)])[0]
        assert not result.successful and 'unconfigured' in result.reason
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.get_parameter('contact_timeout').value == 2.5  # the runtime change kept
        assert node.trigger_shutdown() == TransitionCallbackReturn.SUCCESS
        assert node.lifecycle_state == 'finalized' and entities(node) == before
    finally:
        node.destroy_node()


class _FailingResume(DistributorNode):
    """A distributor whose activation raises (what error processing is for)."""

    def _resume(self) -> None:
        raise RuntimeError('the clock went away')


def test_a_transition_that_raises_goes_through_error_processing(ctx):
    node = make(ctx, 'distributor', _FailingResume)
    try:
        before = entities(node)
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.trigger_activate() == TransitionCallbackReturn.ERROR
        assert node.lifecycle_state == 'unconfigured' and not node.is_active
        assert entities(node) == before  # released by on_error
        level, message = node.lifecycle_status
        assert level == ERROR and message.startswith('unconfigured: error processing after '
                                                     'RuntimeError: the clock went away'), message
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS  # it can start again
        level, message = node.lifecycle_status
        assert level == OK and message.startswith('inactive'), message
    finally:
        node.destroy_node()


@pytest.mark.parametrize('kind, bad, reason', [
    ('distributor', {'contact_types': ['rigid', 'glue']}, "parameter 'contact_types'"),
    ('analyzer', {'sensor_signs': [1, 0]}, "parameter 'sensor_signs'")])
def test_a_failed_configure_releases_everything_and_says_why(ctx, kind, bad, reason):
    node = make(ctx, kind, **bad)
    try:
        before = entities(node)
        for attempt in range(2):
            assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
            assert node.lifecycle_state == 'unconfigured' and entities(node) == before
            level, message = node.lifecycle_status
            assert level == ERROR and message.startswith('unconfigured: configure failed') \
                and reason in message, message
    finally:
        node.destroy_node()


def test_autostart_raises_the_configuration_error_as_a_constructor_did(ctx):
    from wrench_distribution.config import ConfigError
    with pytest.raises(ConfigError, match="parameter 'contact_types'"):
        make(ctx, 'distributor', autostart=True, contact_types=['rigid', 'glue'])


def test_an_input_acts_only_while_active_and_a_timer_gets_no_timer_info(ctx):
    """The gate takes what its callback takes: rclpy hands TimerInfo only to a callback with a parameter."""
    node = make(ctx, 'distributor')
    try:
        calls = []
        tick = node.when_active(lambda: calls.append('tick'))
        take = node.when_active(lambda msg: calls.append(msg))
        assert not inspect.signature(tick).parameters and inspect.signature(take).parameters
        tick()
        take('before')
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        tick()
        take('inactive')
        assert calls == []
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        tick()
        take('active')
        assert calls == ['tick', 'active']
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        take('after')
        assert calls == ['tick', 'active']
    finally:
        node.destroy_node()


def _calibration(path, object_mass: float) -> None:
    path.write_text(yaml.safe_dump({'/**/wrench_distributor': {'ros__parameters': {'object_mass': object_mass}}}))


def test_the_calibration_file_is_taken_once_by_the_configure_that_accepts_it(ctx, tmp_path):
    path = tmp_path / 'calibration.yaml'
    path.write_text('object_mass: [3.2\n')  # not YAML: refused, nothing taken
    node = make(ctx, 'distributor', object_mass=1.0, calibration_file=str(path))
    try:
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        level, message = node.lifecycle_status
        assert level == ERROR and f"calibration_file '{path}'" in message, message
        assert node.get_parameter('object_mass').value == 1.0
        _calibration(path, 3.2)  # the file mended: the next configure takes it
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.get_parameter('object_mass').value == 3.2
        assert node.describe_parameter('object_mass').read_only
        assert node.trigger_cleanup() == TransitionCallbackReturn.SUCCESS
        _calibration(path, 4.0)  # fixed since it was taken: not read again
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node.get_parameter('object_mass').value == 3.2
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    finally:
        node.destroy_node()
