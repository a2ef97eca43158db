"""The test tree's one set-up: import paths and hypothesis profiles.

``test/<group>/`` holds the tests of one layer, ``test/helpers/`` the modules they share
(docs/contributing.md, "Test layout"). Both are put on ``sys.path`` here, so that a test
imports a helper (``from ros_harness import domain_id_for``), or a test module of another
group, by its bare name, under any pytest (a robot's may predate the ``pythonpath`` option).

Hypothesis profiles: deterministic in CI, broader on demand.
``HYPOTHESIS_PROFILE=thorough make test`` explores ten times more examples.
"""
import os
import sys

from hypothesis import settings

TEST_ROOT = os.path.dirname(os.path.abspath(__file__))
#: the helpers first, then every group (a test module imported from another group)
IMPORT_PATHS = [os.path.join(TEST_ROOT, 'helpers')] + sorted(
    entry.path for entry in os.scandir(TEST_ROOT)
    if entry.is_dir() and entry.name != 'helpers' and not entry.name.startswith(('.', '_')))
sys.path[:0] = [path for path in IMPORT_PATHS if path not in sys.path]

settings.register_profile('ci', max_examples=60, derandomize=True, deadline=None)
settings.register_profile('thorough', max_examples=600, deadline=None)
settings.load_profile(os.environ.get('HYPOTHESIS_PROFILE', 'ci'))
