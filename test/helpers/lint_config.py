"""What the ament lint tests check, in one place (test_flake8.py, test_pep257.py).

The linters run with ament's defaults plus the project choices documented in ``setup.cfg``
(``[flake8]``: lines up to 120 characters) and below (pep257: ``D213`` ignored, as
``ament_flake8``'s docstring plugin already does: the summary sits on the first line).
"""
import os
from typing import List

#: the repository (this file is in test/helpers/)
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAKE8_CONFIG = os.path.join(PACKAGE_ROOT, 'setup.cfg')
PEP257_ADD_IGNORE = ['D213']
LINTED = ['setup.py', 'launch', 'test', 'wrench_distribution', 'benchmarks']

# Files allowed to have known lint errors for a while (e.g. while another branch edits
# them); empty: every file is clean. ``WD_LINT_ALL=1`` lints them anyway.
PENDING: set = set()


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
