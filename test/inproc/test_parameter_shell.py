"""The node shell of ros/parameters.py: validate in the on-set callback, apply after the set."""
from hypothesis import given, settings, strategies as st
import pytest
import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter

from inproc import finalize_garbage_nodes
from ros_harness import domain_id_for
from wrench_distribution.config.schema import ParamSpec
from wrench_distribution.ros.parameters import add_parameter_callbacks, declare_from_specs

pytestmark = pytest.mark.ros

SPEC = ParamSpec('gain', 'double', 1.0, 'a gain', minimum=0.0, read_only=False)
LIMIT = 10.0  # enforced by the check alone (no descriptor range: rclpy would refuse first)
POST_SET = hasattr(Node, 'add_post_set_parameters_callback')


class Probe:
    """A node with one runtime parameter whose check and apply record what they saw."""

    def __init__(self, ctx: Context) -> None:
        self.node = Node('shell_probe', context=ctx)
        declare_from_specs(self.node, [SPEC])
        self.checked = []  # (requested value, stored value, plans applied so far)
        self.applied = []  # (plan, stored value when applied)
        add_parameter_callbacks(self.node, {'gain': SPEC}, self.check, self.apply)

    def stored(self) -> float:
        return self.node.get_parameter('gain').value

    def check(self, params):
        value = params[0].value
        self.checked.append((value, self.stored(), len(self.applied)))
        if value > LIMIT:
            return f'gain {value} is over {LIMIT}', None
        return None, value

    def apply(self, plan) -> None:
        self.applied.append((plan, self.stored()))

    def request(self, value: float):
        return self.node.set_parameters([Parameter('gain', value=float(value))])[0]


@pytest.fixture(scope='module')
def ctx():
    c = Context()
    rclpy.init(context=c, domain_id=domain_id_for(__name__))
    yield c
    finalize_garbage_nodes()
    rclpy.shutdown(context=c)


def test_check_changes_nothing_and_apply_runs_after_the_set(ctx):
    probe = Probe(ctx)
    try:
        assert probe.request(2.5).successful
        # the check saw the old value and nothing applied yet
        assert probe.checked == [(2.5, 1.0, 0)]
        assert [plan for plan, _ in probe.applied] == [2.5]
        if POST_SET:  # applied in the post-set callback: rclpy already stored the value
            assert probe.applied[0][1] == 2.5
        else:  # Humble: applied at the end of the on-set callback, before rclpy stores it
            assert probe.applied[0][1] == 1.0
        refused = probe.request(20.0)
        assert not refused.successful
        assert 'over' in refused.reason
        assert len(probe.applied) == 1 and probe.stored() == 2.5
    finally:
        probe.node.destroy_node()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=30.0), min_size=1, max_size=8))
def test_applied_plans_are_exactly_the_accepted_requests(ctx, values):
    probe = Probe(ctx)
    try:
        results = [probe.request(v).successful for v in values]
        accepted = [v for v, ok in zip(values, results) if ok]
        assert results == [v <= LIMIT for v in values]
        assert [plan for plan, _ in probe.applied] == accepted
        assert probe.stored() == (accepted[-1] if accepted else SPEC.default)
    finally:
        probe.node.destroy_node()
