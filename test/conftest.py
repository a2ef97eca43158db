"""The test tree's set-up: import paths, modules loaded up front, hypothesis, test order.

``test/<group>/`` holds the tests of one layer, ``test/helpers/`` the modules they share
(docs/contributing.md, "Test layout"). Both are put on ``sys.path`` here, so that a test
imports a helper (``from ros_harness import domain_id_for``), or a test module of another
group, by its bare name, under any pytest (a robot's may predate the ``pythonpath`` option).

Hypothesis profiles: deterministic in CI, broader on demand.
``HYPOTHESIS_PROFILE=thorough make test`` explores ten times more examples.
"""
import importlib
import os
import pkgutil
import sys

from hypothesis import settings
import pytest

TEST_ROOT = os.path.dirname(os.path.abspath(__file__))
#: the helpers first, then every group (a test module imported from another group)
IMPORT_PATHS = [os.path.join(TEST_ROOT, 'helpers')] + sorted(
    entry.path for entry in os.scandir(TEST_ROOT)
    if entry.is_dir() and entry.name != 'helpers' and not entry.name.startswith(('.', '_')))
sys.path[:0] = [path for path in IMPORT_PATHS if path not in sys.path]


def import_every_local_module() -> None:
    """Import every module of the package and of ``test/helpers`` (those that import here).

    Hypothesis draws part of its examples from the constants of the local modules loaded at
    the time. Under pytest-xdist a worker runs whatever tests it is handed, which load
    other modules first, so a derandomized test would draw other examples from one run to
    the next; with every module loaded up front, a test's examples depend only on the
    tests collected (``make test`` and ``make test-fast`` each draw the same ones every run).
    """
    import wrench_distribution
    names = [m.name for m in pkgutil.walk_packages(wrench_distribution.__path__, 'wrench_distribution.')]
    names += sorted(m.name for m in pkgutil.iter_modules([IMPORT_PATHS[0]]))
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # e.g. a ROS module where rclpy is not installed
            pass


import_every_local_module()


def import_pyplot_up_front() -> None:
    """Import matplotlib's pyplot (Agg) before any test runs.

    ``analyze-bag`` imports it in a background thread while a bag is analysed
    (``bag/plots.py``, ``preload``). Run in the test's own process, a command that fails
    early can leave that import running into pytest's teardown, whose iteration over a
    dictionary the import grows ("dictionary changed size during iteration"). Imported here,
    the thread finds the module loaded and returns at once.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot  # noqa: F401


import_pyplot_up_front()

settings.register_profile('ci', max_examples=60, derandomize=True, deadline=None)
settings.register_profile('thorough', max_examples=600, deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'ci'))

#: Tests that start first under pytest-xdist (node id prefixes; the longest, measured with
#: ``--durations`` and per test CPU time: whole demo runs, the colcon workspace, the shutdown
#: stress, the three tests of about 20 s of CPU each); then every other ``slow`` test, then the
#: rest, each in collection order. A worker takes the next test when it is free, so the
#: longest runs do not end the suite alone.
LONGEST_FIRST = ('demo/test_real_cell_ros.py::test_calibration_procedure', 'demo/',
                 'package/test_colcon_workspace.py', 'ros/test_ros_shutdown.py',
                 'core/test_friction.py::test_agrees_with_the_independent_reference',
                 'core/test_grasp_identification.py::test_point_contacts', 'docs/test_flake8.py',
                 'docs/test_docs_commands.py')
#: Groups whose every test is marked ``timing``: a demo test runs the whole demo (four or five
#: node processes, about one core) whose analyzer is not in the simulator's lockstep; under CPU
#: contention it falls behind and reads late or out-of-sync samples (measured: a squeeze 15 N
#: off, a tare answered after the grasp, with three demos at once on the 2-core machine).
TIMING_GROUPS = ('demo/',)


def start_rank(item) -> tuple:
    """Return where a test starts in the run: the longest first, then ``slow`` tests, the rest.

    :param item: a collected test.
    :return: a sort key (smaller starts earlier).
    """
    test_id = os.path.relpath(str(item.path), TEST_ROOT).replace(os.sep, '/') + '::' + item.name
    for rank, prefix in enumerate(LONGEST_FIRST):
        if test_id.startswith(prefix):
            return (0, rank)
    return (1, 0) if item.get_closest_marker('slow') else (2, 0)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Order the tests by :func:`start_rank` (stable: each rank keeps the collection order).

    Every xdist worker collects and orders the same way; ``--dist loadgroup
    --no-loadscope-reorder`` (``make test``) hands them out in this order.
    """
    items.sort(key=start_rank)
    for item in items:
        if os.path.relpath(str(item.path), TEST_ROOT).replace(os.sep, '/').startswith(TIMING_GROUPS):
            item.add_marker(pytest.mark.timing)


def pytest_runtest_setup(item) -> None:
    """Fail a test of an ``xdist_group`` that ``--dist loadgroup`` could not keep together.

    pytest-xdist marks a grouped test by renaming its node id (``...::test@group``); where the
    installed pytest does not let it (9.2 with xdist 3.8), the tests of a module with a shared
    fixture (a colcon workspace, a Dask cluster) went to any worker, which built the fixture
    again, silently.

    :param item: the test about to run.
    """
    if (getattr(item.config.option, 'loadgroup', False)  # set on the workers of --dist loadgroup
            and item.get_closest_marker('xdist_group') and '@' not in item.nodeid):
        pytest.fail('--dist loadgroup ignored the xdist_group of this test: install the pytest that '
                    'requirements-test.txt names', pytrace=False)


@pytest.fixture
def children():
    """Give a test its child processes by name, all stopped at its end (``processes.Children``)."""
    from wrench_distribution.processes import Children
    with Children() as group:
        yield group
