"""The executor choice: one function makes it, the docs state it, every node uses it."""
import importlib.metadata
import os
import re

import pytest

from ros_harness import domain_id_for, REPO, ros_env, script
from wrench_distribution.processes import Children

PACKAGE_ROOT = REPO
PACKAGE_DIR = os.path.join(PACKAGE_ROOT, 'wrench_distribution')
#: The node entry points of setup.py (console scripts); the test below finds them there.
NODE_SCRIPTS = {'distributor', 'analyzer', 'cell', 'object-sim', 'object-controller',
                'baseline-distributor'}


@pytest.fixture
def ros_context():
    """Yield a private, initialised rclpy context (no node, no DDS traffic)."""
    import rclpy
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    ctx.try_shutdown()


def _read(*parts: str) -> str:
    with open(os.path.join(PACKAGE_ROOT, *parts)) as f:
        return f.read()


def _events_name() -> str:
    try:
        from rclpy.experimental import EventsExecutor  # noqa: F401
        return 'EventsExecutor'
    except ImportError:  # Humble: single-threaded instead
        return 'SingleThreadedExecutor'


@pytest.mark.ros
def test_default_executor_is_the_one_the_docs_state(ros_context, monkeypatch):
    """Without a choice, ``make_executor`` builds the executor docs/wiring.md and benchmarks.md name."""
    from wrench_distribution.ros.runner import EXECUTOR_ENV, make_executor
    monkeypatch.delenv(EXECUTOR_ENV, raising=False)
    ex = make_executor(context=ros_context)
    try:
        built = type(ex).__name__
    finally:
        ex.shutdown()
    readme = re.search(r"The nodes spin on rclpy's `(\w+)` by default \(on an rclpy without "
                       r'it, e.g.\s+Humble: `(\w+)`\)', _read('docs', 'wiring.md'))
    bench = re.search(r'Default: `(\w+)`', _read('docs', 'benchmarks.md'))
    assert readme is not None and bench is not None
    documented = readme.group(1) if readme.group(1) == _events_name() else readme.group(2)
    assert documented == built
    assert bench.group(1) == readme.group(1)


@pytest.mark.ros
@pytest.mark.parametrize('kind, expected', [
    ('single', 'SingleThreadedExecutor'),
    ('multi', 'MultiThreadedExecutor'),
    ('events', None),
])
def test_environment_variable_chooses_the_executor(ros_context, monkeypatch, kind, expected):
    """``WRENCH_DISTRIBUTION_EXECUTOR`` picks the kind; an explicit argument overrides it."""
    from wrench_distribution.ros.runner import EXECUTOR_ENV, make_executor
    expected = expected or _events_name()
    monkeypatch.setenv(EXECUTOR_ENV, kind)
    from_env = make_executor(context=ros_context)
    other = 'multi' if kind != 'multi' else 'single'
    explicit = make_executor(other, context=ros_context)
    try:
        assert type(from_env).__name__ == expected
        assert type(explicit).__name__ != type(from_env).__name__
    finally:
        from_env.shutdown()
        explicit.shutdown()


def test_unknown_executor_kind_is_a_configuration_error(monkeypatch):
    """A misspelt kind is refused with a message naming the variable and the choices."""
    from wrench_distribution.config import ConfigError
    from wrench_distribution.ros.runner import EXECUTOR_ENV, EXECUTOR_KINDS, make_executor
    monkeypatch.setenv(EXECUTOR_ENV, 'fastest')
    with pytest.raises(ConfigError) as info:
        make_executor()
    assert EXECUTOR_ENV in str(info.value) and 'fastest' in str(info.value)
    assert all(k in str(info.value) for k in EXECUTOR_KINDS)


@pytest.mark.ros
def test_every_node_entry_point_takes_its_executor_from_make_executor():
    """Each node console script, given an unknown kind, exits 2 with make_executor's message.

    Only ``make_executor`` reads the variable, so the message proves the script went through
    it (and through ``run_node``, which turns the error into exit code 2).
    """
    scripts = {e.name for e in importlib.metadata.distribution('wrench_distribution').entry_points
               if e.group == 'console_scripts' and e.value.split(':')[0] == 'wrench_distribution.entry'}
    assert scripts == NODE_SCRIPTS
    env = ros_env(domain_id_for(), WRENCH_DISTRIBUTION_EXECUTOR='fastest')
    with Children() as nodes:
        for name in sorted(scripts):
            nodes.start(name, [script(name)], env)
        results = {name: (node.wait(90), node.output()) for name, node in nodes.items()}
    for name, (rc, err) in results.items():
        assert rc == 2, (name, rc, err)
        assert "WRENCH_DISTRIBUTION_EXECUTOR='fastest'" in err, (name, err)


def test_no_module_but_the_runner_builds_an_executor():
    """The demo's recorder and every node get their executor from ``make_executor``."""
    built_here = re.compile(r'\b(SingleThreaded|MultiThreaded|Events)Executor\s*\(')
    offenders = []
    for root, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            path = os.path.join(root, name)
            if not name.endswith('.py') or path.endswith(os.path.join('ros', 'runner.py')):
                continue
            with open(path) as f:
                if built_here.search(f.read()):
                    offenders.append(os.path.relpath(path, PACKAGE_ROOT))
    assert offenders == []
