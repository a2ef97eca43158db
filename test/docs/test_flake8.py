"""ament_flake8 on the package, with the project configuration in setup.cfg."""
import glob
import os
import xml.etree.ElementTree as ET

import pytest

from lint_config import excluded, FLAKE8_CONFIG, linted_paths, PACKAGE_ROOT


@pytest.mark.lint
@pytest.mark.flake8
def test_flake8():
    """No flake8 error (ament's plugins and defaults; 120-character lines)."""
    from ament_flake8.main import main_with_errors
    argv = ['--config', FLAKE8_CONFIG] + linted_paths()
    skip = excluded()
    if skip:
        argv += ['--exclude'] + skip
    rc, errors = main_with_errors(argv=argv)
    assert rc == 0, f'{len(errors)} flake8 error(s):\n' + '\n'.join(errors)


@pytest.mark.lint
def test_package_xml_declares_exactly_the_lint_tests():
    """Every ament linter package.xml declares has its test in test/, and the reverse."""
    root = ET.parse(os.path.join(PACKAGE_ROOT, 'package.xml')).getroot()
    declared = {e.text.strip()[len('ament_'):] for e in root.iter('test_depend')
                if e.text.strip().startswith('ament_')}
    tests = {os.path.basename(p)[len('test_'):-len('.py')]
             for p in glob.glob(os.path.join(PACKAGE_ROOT, 'test', '**', 'test_*.py'), recursive=True)}
    linters = {'copyright', 'flake8', 'pep257', 'xmllint', 'mypy', 'black', 'pycodestyle'}
    assert declared == tests & linters, (declared, tests & linters)
