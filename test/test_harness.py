"""The ROS test harness finds console scripts where colcon installs them."""
import os
import stat

from ros_harness import domain_id_for, script


def _fake_script(prefix, name: str) -> str:
    path = prefix / 'lib' / 'wrench_distribution' / name
    path.parent.mkdir(parents=True)
    path.write_text('#!/bin/sh\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_script_found_under_an_ament_prefix(tmp_path, monkeypatch):
    """A script only in <prefix>/lib/wrench_distribution (colcon's layout) is found."""
    name = 'wd-harness-probe'
    path = _fake_script(tmp_path, name)
    monkeypatch.setenv('AMENT_PREFIX_PATH', os.pathsep.join(['/nonexistent', str(tmp_path)]))
    assert script(name) == path


def test_missing_script_names_every_place_looked_at(tmp_path, monkeypatch):
    """A script nowhere raises FileNotFoundError listing the prefixes tried."""
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    try:
        script('wd-harness-missing')
    except FileNotFoundError as e:
        assert str(tmp_path / 'lib' / 'wrench_distribution' / 'wd-harness-missing') in str(e)
    else:
        raise AssertionError('no FileNotFoundError')


def test_domain_id_comes_from_the_environment(monkeypatch):
    """ROS_DOMAIN_ID is the one source of the tests' domain ids."""
    monkeypatch.setenv('ROS_DOMAIN_ID', '23')
    assert domain_id_for() == 23
    assert domain_id_for('any_module', offset=1) == 24
