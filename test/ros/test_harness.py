"""The ROS test harness finds console scripts where colcon installs them."""
import os
import stat

import pytest

from ros_harness import DOMAIN_BLOCK, domain_id_for, ros_env, script


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
    monkeypatch.delenv('PYTEST_XDIST_WORKER', raising=False)  # a run without xdist
    assert domain_id_for() == 23
    assert domain_id_for('any_module', offset=1) == 24


def test_each_xdist_worker_owns_a_block_of_domain_ids(monkeypatch):
    """Worker gw<N> takes the N-th block of five ids above the base; no two workers share one."""
    monkeypatch.setenv('ROS_DOMAIN_ID', '120')
    taken = {}
    for worker in range(6):
        monkeypatch.setenv('PYTEST_XDIST_WORKER', f'gw{worker}')
        ids = [domain_id_for(offset=k) for k in range(DOMAIN_BLOCK)]
        assert ids == list(range(120 + 5 * worker, 125 + 5 * worker))
        for i in ids:
            assert taken.setdefault(i, worker) == worker, f'id {i} of gw{taken[i]} given to gw{worker}'
    with pytest.raises(ValueError, match='outside the block'):
        domain_id_for(offset=DOMAIN_BLOCK)
    with pytest.raises(ValueError, match='outside the block'):
        domain_id_for(offset=-1)


def test_a_subprocess_is_no_xdist_worker(monkeypatch):
    """A pytest run started by a test takes the domain it is given as its base, unshifted."""
    monkeypatch.setenv('PYTEST_XDIST_WORKER', 'gw3')
    monkeypatch.setenv('PYTEST_XDIST_TESTRUNUID', 'abc')
    env = ros_env(137)
    assert env['ROS_DOMAIN_ID'] == '137'
    assert not [k for k in env if k.startswith('PYTEST_XDIST')]
