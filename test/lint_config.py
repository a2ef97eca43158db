"""What the ament lint tests check, in one place (test_flake8.py, test_pep257.py).

The linters run with ament's defaults plus the project choices documented in ``setup.cfg``
(``[flake8]``: lines up to 120 characters) and below (pep257: ``D213`` ignored, as
``ament_flake8``'s docstring plugin already does: the summary sits on the first line).
"""
import os
from typing import List

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAKE8_CONFIG = os.path.join(PACKAGE_ROOT, 'setup.cfg')
PEP257_ADD_IGNORE = ['D213']
LINTED = ['setup.py', 'launch', 'test', 'wrench_distribution', 'benchmarks']

# Files with known lint errors, being edited on other branches at the time the lint tests
# were added; they are cleaned up after those branches merge, and this set emptied.
# ``WD_LINT_ALL=1`` lints them too.
PENDING = {
    'benchmarks/bench_bag.py', 'test/bag_fixtures.py', 'test/test_bag_errors.py',
    'test/test_bag_live_replay.py', 'test/test_bag_offline.py', 'test/test_cli.py',
    'test/test_ros_analyzer.py', 'test/test_ros_distributor.py',
    'wrench_distribution/analyzer_node.py', 'wrench_distribution/bag/command.py',
    'wrench_distribution/bag/csvformat.py', 'wrench_distribution/bag/parallel.py',
    'wrench_distribution/bag/pipeline.py', 'wrench_distribution/bag/player.py',
    'wrench_distribution/bag/plotjuggler.py', 'wrench_distribution/bag/poses.py',
    'wrench_distribution/bag/quaternions.py', 'wrench_distribution/bag/reader.py',
    'wrench_distribution/bag/samples_csv.py', 'wrench_distribution/bag/summary.py',
    'wrench_distribution/bag/sync.py', 'wrench_distribution/cli.py',
    'wrench_distribution/core/problem.py', 'wrench_distribution/distributor_node.py',
    'wrench_distribution/params.py', 'wrench_distribution/ros/conversions.py',
    'wrench_distribution/ros/parameters.py', 'wrench_distribution/ros/qos.py',
}


def excluded() -> List[str]:
    """Paths the lint tests skip (absolute), empty with ``WD_LINT_ALL=1``.

    :return: paths.
    """
    if os.environ.get('WD_LINT_ALL') == '1':
        return []
    return [os.path.join(PACKAGE_ROOT, p) for p in sorted(PENDING)
            if os.path.exists(os.path.join(PACKAGE_ROOT, p))]


def linted_paths() -> List[str]:
    """Top-level paths handed to the linters (absolute).

    :return: paths.
    """
    return [os.path.join(PACKAGE_ROOT, p) for p in LINTED]
