"""ament_flake8 on the package, with the project configuration in setup.cfg."""
import pytest

from lint_config import excluded, FLAKE8_CONFIG, linted_paths


@pytest.mark.lint
@pytest.mark.flake8
def test_flake8():
    """No flake8 error (ament's plugins and defaults; 120-character lines)."""
    main_with_errors = pytest.importorskip('ament_flake8.main').main_with_errors
    argv = ['--config', FLAKE8_CONFIG] + linted_paths()
    skip = excluded()
    if skip:
        argv += ['--exclude'] + skip
    rc, errors = main_with_errors(argv=argv)
    assert rc == 0, f'{len(errors)} flake8 error(s):\n' + '\n'.join(errors)
