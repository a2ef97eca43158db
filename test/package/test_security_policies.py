"""The shipped SROS2 policies (config/security/*.policy.xml) against the nodes themselves.

No SROS2 here (docs/security.md), so the policies are checked for form and for names:
the XML follows sros2's policy schema (``sros2/policy/schemas/policy.xsd``, format 0.2.0:
``policy/enclaves/enclave[@path]/profiles/profile[@ns, @node]`` holding ``topics``
(publish/subscribe), ``services`` (reply/request) and ``actions`` (call/execute), each
ALLOW or DENY); the distributor and the analyzer are built in this process from the
parameter file the policy is for, and their publishers, subscriptions and services, as
rclpy lists them, must be exactly what their profiles allow; every topic and service the
other enclaves name must exist in the nodes; every input of the nodes, every command topic
and every parameter-setting service must be open to one enclave only.
"""
import glob
import os
import xml.etree.ElementTree as ElementTree

import pytest

from inproc import overrides, ros_context
from ros_harness import REPO
from wrench_distribution.analyzer_node import AnalyzerNode
from wrench_distribution.config import ANALYZER_PARAMS, DISTRIBUTOR_PARAMS, read_ros_params_yaml
from wrench_distribution.distributor_node import DistributorNode

pytestmark = [pytest.mark.ros, pytest.mark.inproc]

POLICIES = sorted(glob.glob(os.path.join(REPO, 'config', 'security', '*.policy.xml')))
#: the parameter file each policy is written for
CELL_FILES = {'dual_arm.policy.xml': os.path.join(REPO, 'config', 'dual_arm.yaml')}
#: policy.xsd: the rule attributes of each list element, and its item element
LISTS = {'topics': ('topic', {'publish', 'subscribe'}),
         'services': ('service', {'reply', 'request'}),
         'actions': ('action', {'call', 'execute'})}
#: entities rcl makes below rclpy's Node lists: every node publishes its log on /rosout, a
#: managed node its transitions on ~/transition_event
RCL_PUBLISHERS = {'/rosout'}
NODES = {'wrench_distributor': (DistributorNode, DISTRIBUTOR_PARAMS),
         'wrench_analyzer': (AnalyzerNode, ANALYZER_PARAMS)}
#: services that change what a node does (the others only read)
WRITING = ('/set_parameters', '/set_parameters_atomically', '/tare', '/calibration/capture',
           '/calibration/clear', '/calibration/identify_tools', '/calibration/identify_object',
           '/save_calibration', '/change_state')
#: what a supervisor calls on a managed node: ``ros2 lifecycle set`` looks the transition's id up
#: in ``get_available_transitions`` before ``change_state``; ``ros2 lifecycle get`` and lifecycle
#: managers read ``get_state``
SUPERVISING = ('/change_state', '/get_state', '/get_available_transitions')


def expand(name: str, ns: str, node: str) -> str:
    """Fully qualified name of a policy expression, as sros2 expands it for a profile."""
    base = ns.rstrip('/')
    if name.startswith('~'):
        return f'{base}/{node}{name[1:]}'
    return name if name.startswith('/') else f'{base}/{name}'


def parse(path: str) -> dict:
    """Check one policy against policy.xsd's structure; return its ALLOW rules.

    :return: ``{(enclave, node): {'publish': set, 'subscribe': set, 'reply': set, ...}}``.
    """
    root = ElementTree.parse(path).getroot()
    assert root.tag == 'policy' and root.get('version') == '0.2.0'
    assert [c.tag for c in root] == ['enclaves']
    rules = {}
    for enclave in root.find('enclaves'):
        assert enclave.tag == 'enclave' and enclave.get('path', '').startswith('/')
        assert enclave and all(c.tag == 'profiles' for c in enclave)
        for profile in enclave.iter('profile'):
            assert profile.get('ns') and profile.get('node'), ElementTree.tostring(profile)
            key = (enclave.get('path'), profile.get('node'))
            allowed = rules.setdefault(key, {a: set() for _, attrs in LISTS.values() for a in attrs})
            for group in profile:
                item, attrs = LISTS[group.tag]
                assert group.attrib and set(group.attrib) <= attrs, group.attrib
                assert set(group.attrib.values()) <= {'ALLOW', 'DENY'}
                assert len(group) >= 1 and all(c.tag == item for c in group)
                for c in group:
                    assert not set(c.text) & set('*?[]'), f'{path}: wildcard {c.text!r}'
                    for right, verdict in group.attrib.items():
                        if verdict == 'ALLOW':
                            allowed[right].add(expand(c.text.strip(), profile.get('ns'),
                                                      profile.get('node')))
    return rules


def entities(node) -> dict:
    """Return what a node declares, as rclpy lists it (names fully qualified)."""
    from rclpy.expand_topic_name import expand_topic_name

    def qualified(entity, resolved: str, given: str) -> str:
        name = getattr(entity, resolved, None)  # Humble lacks some of these properties
        return name if name is not None else expand_topic_name(
            getattr(entity, given), node.get_name(), node.get_namespace())
    return {'publish': {qualified(p, 'topic_name', 'topic') for p in node.publishers}
            | RCL_PUBLISHERS | {f'{node.get_fully_qualified_name()}/transition_event'},
            'subscribe': {qualified(s, 'topic_name', 'topic') for s in node.subscriptions},
            'reply': {qualified(s, 'service_name', 'srv_name') for s in node.services},
            'request': {qualified(c, 'service_name', 'srv_name') for c in node.clients}}


@pytest.fixture(scope='module')
def declared():
    """Build the nodes of each cell file in this process, parameter services on; list them."""
    out = {}
    with ros_context(offset=4) as ctx:
        for policy, path in CELL_FILES.items():
            for name, (cls, specs) in NODES.items():
                node = cls(context=ctx, parameter_overrides=overrides(
                    read_ros_params_yaml(path, name), specs))
                try:
                    out[(policy, name)] = entities(node)
                finally:
                    node.destroy_node()
    return out


def test_every_shipped_policy_is_checked():
    assert {os.path.basename(p) for p in POLICIES} == set(CELL_FILES)


@pytest.mark.parametrize('path', POLICIES, ids=os.path.basename)
def test_the_nodes_profiles_allow_exactly_what_the_nodes_declare(declared, path):
    rules = parse(path)
    policy = os.path.basename(path)
    for name in NODES:
        mine = [r for (_, node), r in rules.items() if node == name]
        assert len(mine) == 1, f'{policy}: one profile of {name}'
        for right, names in declared[(policy, name)].items():
            assert mine[0][right] == names, (name, right, mine[0][right] ^ names)


@pytest.mark.parametrize('path', POLICIES, ids=os.path.basename)
def test_every_name_of_the_other_enclaves_exists_in_the_nodes(declared, path):
    rules = parse(path)
    policy = os.path.basename(path)
    ours = {right: set().union(*(declared[(policy, n)][right] for n in NODES))
            for right in ('publish', 'subscribe', 'reply')}
    for (enclave, node), allowed in rules.items():
        if node in NODES:
            continue
        for name in allowed['publish'] - RCL_PUBLISHERS:  # the controller's own: /rosout
            assert name in ours['subscribe'], f'{enclave} {node} publishes {name}: no node reads it'
        for name in allowed['subscribe']:
            assert name in ours['publish'], f'{enclave} {node} reads {name}: no node publishes it'
        for name in allowed['request']:
            assert name in ours['reply'], f'{enclave} {node} calls {name}: no node serves it'
        assert not allowed['reply'] and not allowed['call'] and not allowed['execute']


@pytest.mark.parametrize('path', POLICIES, ids=os.path.basename)
def test_inputs_commands_and_parameter_services_are_open_to_one_enclave(declared, path):
    rules = parse(path)
    policy = os.path.basename(path)
    params = read_ros_params_yaml(CELL_FILES[policy], 'wrench_distributor')

    def enclaves(right: str, name: str) -> set:
        return {enclave for (enclave, _), allowed in rules.items() if name in allowed[right]}

    inputs = set().union(*(declared[(policy, n)]['subscribe'] for n in NODES))
    assert {'/desired_wrench', '/internal_load'} <= inputs
    for name in inputs:
        assert len(enclaves('publish', name)) == 1, (name, enclaves('publish', name))
    controller = enclaves('publish', '/desired_wrench')
    assert enclaves('publish', '/internal_load') == controller
    commands = params['command_topics']
    distributor = enclaves('reply', '/wrench_distributor/set_parameters')
    for name in commands:
        assert enclaves('publish', name) == distributor and enclaves('subscribe', name), name
    writing = [s for n in NODES for s in declared[(policy, n)]['reply'] if s.endswith(WRITING)]
    # two parameter setters and the lifecycle transitions per node, the analyzer's tare and its
    # five calibration services that change its state or write the calibration file
    assert len(writing) == 12
    for name in writing:
        assert enclaves('request', name) == controller, (name, enclaves('request', name))


@pytest.mark.parametrize('path', POLICIES, ids=os.path.basename)
def test_the_controller_can_supervise_both_nodes_as_ros2_lifecycle_does(declared, path):
    rules = parse(path)
    controller = {enclave for (enclave, _), allowed in rules.items()
                  if '/desired_wrench' in allowed['publish']}
    for node in NODES:
        for service in SUPERVISING:
            name = f'/{node}{service}'
            assert name in declared[(os.path.basename(path), node)]['reply'], name
            allowed = {enclave for (enclave, _), rule in rules.items() if name in rule['request']}
            assert allowed == controller, (name, allowed)
