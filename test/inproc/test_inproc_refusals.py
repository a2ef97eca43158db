"""Every refused parameter change named, on both nodes, in this process.

rclpy refuses some requests before a node's on-set callback sees them (a read-only parameter,
a wrong type, a number outside the declared range, an undeclared name); the parameter shell
names them from the pre-set callback, predicting rclpy's decision from the public descriptor.
The prediction is held against what rclpy does (a property over requests of every kind, one
parameter and several at once). Then, on the distributor and the analyzer: every kind of
refusal is counted once, named in the diagnostics and logged; and a request that mixes a safe
and an unsafe change is what docs/security.md says: ``set_parameters`` judges each parameter on
its own (the safe one applies), ``set_parameters_atomically`` refuses it whole.
"""
from hypothesis import given, settings, strategies as st
import pytest
from rclpy.exceptions import ParameterNotDeclaredException
from rclpy.node import Node
from rclpy.parameter import Parameter

from inproc import InProcessNode, ros_context
import test_inproc_analyzer as analyzer
from test_inproc_distributor import diagnose, LIMITS, node as distributor
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ANALYZER_PARAMS
from wrench_distribution.config.safety import RefusedChanges
from wrench_distribution.config.schema import ParamSpec
from wrench_distribution.ros.parameters import (add_parameter_callbacks, declare_from_specs,
                                                rclpy_refusal, retyped)

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

PRE_SET = hasattr(Node, 'add_pre_set_parameters_callback')  # rclpy >= Iron
SPECS = [ParamSpec('fixed', 'string', 'a', 'read-only'),
         ParamSpec('share', 'double', 0.5, 'ranged double', minimum=0.0, maximum=1.0, read_only=False),
         ParamSpec('count', 'integer', 5, 'ranged integer', minimum=1, maximum=100, read_only=False),
         ParamSpec('gain', 'double', 1.0, 'open double', minimum=0.0, read_only=False),
         ParamSpec('values', 'double_array', [1.0], 'array', read_only=False),
         ParamSpec('mode', 'string', 'hold', 'string', read_only=False),
         ParamSpec('flag', 'bool', False, 'bool', read_only=False)]
VALUES = st.one_of(st.floats(-2.0, 200.0, allow_nan=False), st.integers(-5, 200), st.booleans(),
                   st.sampled_from(['x', 'hold']), st.lists(st.floats(-1.0, 1.0), max_size=3),
                   st.just([]), st.lists(st.integers(0, 3), min_size=1, max_size=2),
                   st.sampled_from([0.0, 1.0, 1.0 + 1e-9, 100.0, 1e-300]))
NAMES = st.sampled_from([s.name for s in SPECS] + ['unknown'])


@pytest.fixture(scope='module')
def ctx():
    with ros_context() as c:
        yield c


class Probe:
    """A node with the parameters above whose on-set check records each request it sees."""

    def __init__(self, ctx) -> None:
        self.node = Node('refusal_probe', context=ctx)
        declare_from_specs(self.node, SPECS)
        self.specs = {s.name: s for s in SPECS}
        self.seen = []
        self.refused = RefusedChanges()
        add_parameter_callbacks(self.node, self.specs, self.check, lambda plan: None, self.refused)

    def check(self, params):
        self.seen.append([p.name for p in params])
        return None, None

    def reached(self, request, atomically: bool) -> bool:
        """Send a request; return whether the node's on-set check saw it (every part of it)."""
        self.seen.clear()
        try:
            if atomically:
                self.node.set_parameters_atomically(request)
            else:
                self.node.set_parameters(request)
        except ParameterNotDeclaredException:
            pass
        return bool(self.seen)


@pytest.fixture(scope='module')
def probe(ctx):
    made = Probe(ctx)
    yield made
    made.node.destroy_node()


@pytest.mark.skipif(not PRE_SET, reason='rclpy without a pre-set callback (Humble): nothing predicted')
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(NAMES, VALUES), min_size=1, max_size=3), st.booleans())
def test_the_prediction_is_what_rclpy_decides(probe, request_items, atomically):
    """A request reaches the node's checks exactly when no parameter of it is predicted refused."""
    request = [Parameter(name, value=value) for name, value in request_items]
    if not atomically:
        request = request[:1]  # set_parameters: rclpy judges each parameter on its own
    before = probe.refused.counters['refused_parameter_changes']
    predicted = [rclpy_refusal(probe.node, p, probe.specs) for p in retyped(request, probe.specs)]
    assert probe.reached(request, atomically) == (not any(predicted)), (request_items, predicted)
    assert probe.refused.counters['refused_parameter_changes'] == before + any(predicted)
    for name, why in zip(request_items, predicted):
        assert why is None or f"'{name[0]}'" in why


@pytest.mark.skipif(not PRE_SET, reason='rclpy without a pre-set callback (Humble): nothing predicted')
@pytest.mark.parametrize('name,value,passes', [
    ('share', 1.0, True), ('share', 1.0 + 1e-9, True), ('share', 1.01, False), ('share', -0.0, True),
    ('count', 100, True), ('count', 101, False), ('count', 0, False), ('gain', 3, True),
    ('values', [], True), ('values', [1, 2], True), ('values', ['a'], False), ('mode', 3.0, False),
    ('fixed', 'b', False), ('unknown', 1.0, False), ('flag', 1, False), ('flag', True, True),
])
def test_each_kind_of_request_is_predicted_as_rclpy_decides(probe, name, value, passes):
    request = [Parameter(name, value=value)]
    predicted = rclpy_refusal(probe.node, retyped(request, probe.specs)[0], probe.specs)
    assert (predicted is None) == passes == probe.reached(request, atomically=False), predicted


#: one attempt of each kind of refusal, per node: (parameter, value, what the reason says)
DISTRIBUTOR_ATTEMPTS = [
    ('force_limits', [600.0], 'may only be lowered'),  # a safety rule
    ('on_limit', 'scale', 'never to scale'),
    ('torque_share', 1.5, 'accepted: 0 to 1'),  # outside the declared range (rclpy)
    ('torque_share', 'half', 'accepted: a double'),  # wrong type (rclpy)
    ('calibration_file', '/tmp/elsewhere.yaml', 'read-only'),  # read-only (rclpy)
    ('allow_unsafe_runtime_changes', True, 'read-only'),
    ('effectors', ['a', 'b'], 'read-only'),
    ('force_limitz', [1.0], 'is not declared'),  # undeclared (rclpy)
    ('internal_load_handles', ['warp(left,right)=1.0'], 'internal_load_handles'),  # invalid value
]
ANALYZER_ATTEMPTS = [
    ('sensor_biases', [1e6] + [0.0] * 11, 'out of its bounds'),
    ('sensor_biases', [5000.0] + [0.0] * 11, "sensor's range"),
    ('tare_samples', 0, 'accepted: 1 to 100000'),
    ('tare_state', 'levitating', 'tare_state'),
    ('sync_tolerance', 'soon', 'accepted: a double'),
    ('calibration_file', '/tmp/elsewhere.yaml', 'read-only'),
    ('tool_masses', [0.1, 0.1], 'read-only'),
    ('sensor_bias', [0.0] * 12, 'is not declared'),
]


def _refused_values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


def _attempt_everything(n: InProcessNode, attempts: list, status: str, capfd) -> None:
    """Each attempt refused (nothing changes), named in the log and in the diagnostics, counted once."""
    def in_force() -> dict:
        declared = [name for name, _, _ in attempts if n.node.has_parameter(name)]
        return {name: n.node.get_parameter(name).value for name in declared}
    before = in_force()
    capfd.readouterr()
    for name, value, said in attempts:
        try:
            result = n.node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful, (name, value)
        except ParameterNotDeclaredException:
            assert said == 'is not declared'
    log = capfd.readouterr().err
    assert repr(in_force()) == repr(before)
    shown = _refused_values(diagnose(n)[status])
    assert f'refused_parameter_changes={len(attempts)}' in shown['counters']
    for name, value, said in attempts:
        asked = f'{name}={value!r}'
        line = [text for text in log.splitlines() if f'(asked: {asked})' in text]
        assert len(line) == 1 and said in line[0] and 'parameter change refused' in line[0], (asked, log)
        key = 'refused.(undeclared)' if said == 'is not declared' else f'refused.{name}'
        assert asked in shown[key] and said in shown[key], (key, shown.get(key))


def test_every_refusal_of_the_distributor_is_named_and_counted(ctx, capfd):
    attempts = DISTRIBUTOR_ATTEMPTS if PRE_SET else [a for a in DISTRIBUTOR_ATTEMPTS if a[1] != 'force_limitz'
                                                     and 'accepted: a' not in a[2] and 'read-only' not in a[2]
                                                     and 'to 1' not in a[2]]
    with distributor(ctx, **LIMITS) as n:
        _attempt_everything(n, attempts, 'limits', capfd)
        assert 'refused_unsafe_changes=2' in _refused_values(diagnose(n)['limits'])['counters']


def test_every_refusal_of_the_analyzer_is_named_and_counted(ctx, capfd):
    attempts = ANALYZER_ATTEMPTS if PRE_SET else ANALYZER_ATTEMPTS[:2] + ANALYZER_ATTEMPTS[3:4]
    n = InProcessNode(AnalyzerNode, ctx, analyzer.params(analyzer.ARMS, diagnostics_period=analyzer.DIAG_PERIOD),
                      ANALYZER_PARAMS)
    with n:
        _attempt_everything(n, attempts, 'parameters', capfd)


def test_a_mixed_request_is_judged_per_parameter_and_refused_whole_when_atomic(ctx):
    with distributor(ctx, **LIMITS) as n:
        lowered, raised = Parameter('force_limits', value=[50.0]), Parameter('torque_limits', value=[100.0])
        whole = n.node.set_parameters_atomically([lowered, raised])
        assert not whole.successful and "'torque_limits'" in whole.reason
        assert list(n.node.get_parameter('force_limits').value) == LIMITS['force_limits']
        each = n.node.set_parameters([lowered, raised])
        assert [r.successful for r in each] == [True, False]
        assert list(n.node.get_parameter('force_limits').value) == [50.0]
        assert list(n.node.get_parameter('torque_limits').value) == LIMITS['torque_limits']
        shown = _refused_values(diagnose(n)['limits'])
        assert 'force_limits=[50.0], torque_limits=[100.0]' in shown['refused.torque_limits']
        assert 'refused.force_limits' not in shown
