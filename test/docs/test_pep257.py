"""ament_pep257 on the package (ament convention, D213 ignored: see lint_config.py)."""
import pytest

from lint_config import excluded, linted_paths, PEP257_ADD_IGNORE


@pytest.mark.lint
@pytest.mark.pep257
def test_pep257():
    """No docstring-style error in the linted files."""
    from ament_pep257.main import main
    argv = linted_paths() + ['--add-ignore'] + PEP257_ADD_IGNORE
    skip = excluded()
    if skip:
        argv += ['--exclude'] + skip
    rc = main(argv=argv)
    assert rc == 0, 'pep257 errors: see the output above'
