"""Gravity as the object turns, sensor biases and tare, offline (analyze-bag) and in the engine.

The recording (test/helpers/sensing_fixtures.py) is built by hand: gravity rotated with the object
and into each sensor frame, the tool weight and the bias applied by hand. The analysis
must read back the commanded squeeze and resultant on the held samples.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

import bag_fixtures as F
from ros_harness import REPO
import sensing_fixtures as S
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.config import load_analyzer_config

ROOT = Path(REPO)
COMP = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


def _config(**overrides):
    return load_analyzer_config({'wrench_analyzer': {'ros__parameters': S.params(**overrides)}})


def _read(out: Path) -> tuple:
    """Stamps, squeeze and resultant (k, 6) of ``samples.parquet``."""
    table = pq.read_table(out / 'samples.parquet')
    stamps = np.asarray(table.column('stamp_ns').to_pylist(), np.int64)
    squeeze = table.column(f'internal_load.{F.SQUEEZE}').to_numpy()
    resultant = np.column_stack([table.column(f'resultant.{c}').to_numpy() for c in COMP])
    return stamps, squeeze, resultant


def _truth_at(rec, stamps: np.ndarray) -> tuple:
    rows = np.searchsorted(rec.stamps_ns, stamps)
    assert np.array_equal(rec.stamps_ns[rows], stamps)
    return rows, rec.squeeze[rows], rec.resultant[rows]


@pytest.fixture(scope='module')
def recording():
    return S.make_tilting()


@pytest.mark.parametrize('source', ['tf', 'topic'])
def test_tilting_object_read_back_with_gravity_frame_and_biases(tmp_path, recording, source):
    """gravity_frame + sensor_biases: every sample reads back the squeeze and the resultant."""
    bag = S.write_bag(tmp_path / 'bag', recording, storage='mcap' if source == 'tf' else 'sqlite3')
    config = _config(object_orientation_source=source,
                     sensor_biases=S.BIASES.ravel().tolist())
    summary = analyze_bag(bag, config, tmp_path / 'out', Options(plots=False))
    stamps, squeeze, resultant = _read(tmp_path / 'out')
    assert len(stamps) == len(recording.stamps_ns)  # every sample has its orientation
    assert summary['dropped']['samples_without_orientation'] == 0
    _, want_squeeze, want_resultant = _truth_at(recording, stamps)
    np.testing.assert_allclose(squeeze, want_squeeze, atol=1e-8)
    np.testing.assert_allclose(resultant, want_resultant, atol=1e-8)


def test_without_the_orientation_the_tools_move_into_the_read_out(tmp_path, recording):
    """Control: gravity taken constant in the object frame misreads the tilted tools."""
    bag = S.write_bag(tmp_path / 'bag', recording)
    config = _config(gravity_frame='', sensor_biases=S.BIASES.ravel().tolist())
    analyze_bag(bag, config, tmp_path / 'out', Options(plots=False))
    stamps, squeeze, resultant = _read(tmp_path / 'out')
    _, want_squeeze, want_resultant = _truth_at(recording, stamps)
    assert np.abs(resultant - want_resultant)[:, :3].max() > 1.0  # newtons: the tools' weight


def test_without_biases_the_squeeze_is_wrong(tmp_path, recording):
    """Control: the biases matter (the tare test below is not vacuous)."""
    bag = S.write_bag(tmp_path / 'bag', recording)
    analyze_bag(bag, _config(), tmp_path / 'out', Options(plots=False))
    stamps, squeeze, _ = _read(tmp_path / 'out')
    rows, want, _ = _truth_at(recording, stamps)
    assert np.abs(squeeze - want).max() > 0.5


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, '-m', 'wrench_distribution.cli', *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


@pytest.mark.parametrize('window', ['relative', 'absolute'])
def test_analyze_bag_tare_from_the_free_part(tmp_path, recording, window):
    """--tare on the free samples finds the biases added by hand; the held part reads back."""
    bag = S.write_bag(tmp_path / 'bag', recording)
    cfg = tmp_path / 'params.yaml'
    cfg.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': S.params()}}))
    end = (S.FREE - 5) * F.PERIOD_NS * 1e-9
    if window == 'relative':
        tare = f'0.0:{end:.6f}'
    else:
        t0 = F.START_NS * 1e-9
        tare = f'@{t0:.6f}:@{t0 + end:.6f}'
    run = _cli('analyze-bag', str(bag), '--config', str(cfg), '--out', str(tmp_path / 'out'),
               '--no-plots', '--json', '--tare', tare)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert summary['tare']['state'] == 'free'
    assert S.FREE - 8 <= summary['tare']['samples'] <= S.FREE - 4
    np.testing.assert_allclose(np.reshape(summary['tare']['sensor_biases'], (3, 6)), S.BIASES,
                               atol=1e-9)
    # the tare's first pass is not counted twice: every topic read exactly as announced
    for topic, counted in summary['completeness']['topics'].items():
        assert counted['read'] == counted['announced'], (topic, counted)
    stamps, squeeze, resultant = _read(tmp_path / 'out')
    rows, want_squeeze, want_resultant = _truth_at(recording, stamps)
    np.testing.assert_allclose(squeeze, want_squeeze, atol=1e-8)
    np.testing.assert_allclose(resultant, want_resultant, atol=1e-8)
    assert recording.held[rows].sum() == S.HELD


@pytest.mark.parametrize('bad', ['5', '2:1', '1:@3', 'a:b', 'nan:1'])
def test_analyze_bag_tare_option_errors(tmp_path, bad):
    run = _cli('analyze-bag', str(tmp_path / 'nobag'), '--config', str(tmp_path / 'x.yaml'),
               '--out', str(tmp_path / 'out'), '--tare', bad)
    assert run.returncode == 2
    assert run.stderr.startswith('error: --tare')


def test_tare_outside_the_bag_is_a_clear_error(tmp_path, recording):
    bag = S.write_bag(tmp_path / 'bag', recording)
    cfg = tmp_path / 'params.yaml'
    cfg.write_text(yaml.safe_dump({'wrench_analyzer': {'ros__parameters': S.params()}}))
    run = _cli('analyze-bag', str(bag), '--config', str(cfg), '--out', str(tmp_path / 'out'),
               '--no-plots', '--tare', '100:101')
    assert run.returncode == 2
    assert 'no sample recorded for the tare' in run.stderr


def test_held_tare_takes_the_weight_and_no_internal_load(tmp_path):
    """tare_state=held: biases that make the held object read its weight and no squeeze."""
    rec = S.make_tilting()
    bag = S.write_bag(tmp_path / 'bag', rec)
    config = _config(tare_state='held')
    first = int(rec.stamps_ns[S.FREE]) * 1e-9
    analyze_bag(bag, config, tmp_path / 'out', Options(plots=False, tare=(
        first, first + 0.05, True)))
    stamps, squeeze, resultant = _read(tmp_path / 'out')
    rows = np.searchsorted(rec.stamps_ns, stamps)
    window = (stamps >= rec.stamps_ns[S.FREE]) & (stamps <= rec.stamps_ns[S.FREE] + 50_000_000)
    # the window's mean squeeze and mean resultant are now what a held object at rest has
    assert abs(squeeze[window].mean()) < 1e-9
    g_object = S.object_rotation((stamps[window] - F.START_NS) * 1e-9).inv().apply(S.G_WORLD)
    weight = -F.MASS * g_object
    np.testing.assert_allclose(resultant[window, :3].mean(axis=0), weight.mean(axis=0),
                               atol=1e-9)
    assert np.abs(resultant[window, 3:].mean(axis=0)).max() < 1e-9
    assert rec.held[rows].any()


def test_unknown_orientation_is_dropped_and_counted(tmp_path, recording):
    """/tf ends before the F/T streams: the samples after it are dropped and counted."""
    last = 170
    bag = S.write_bag(tmp_path / 'bag', recording, tf_until=last)
    config = _config(sensor_biases=S.BIASES.ravel().tolist())
    summary = analyze_bag(bag, config, tmp_path / 'out', Options(plots=False))
    stamps, squeeze, _ = _read(tmp_path / 'out')
    assert stamps.max() == recording.stamps_ns[last]
    dropped = len(recording.stamps_ns) - last - 1
    assert summary['dropped']['samples_without_orientation'] == dropped
    assert len(stamps) == last + 1
    _, want, _ = _truth_at(recording, stamps)
    np.testing.assert_allclose(squeeze, want, atol=1e-8)


def test_pose_topic_gap_longer_than_orientation_timeout(tmp_path, recording):
    """A gap in /object_pose: samples whose newest pose is older than the timeout are dropped."""
    gap = range(100, 140)
    bag = S.write_bag(tmp_path / 'bag', recording, pose_gap=gap)
    config = _config(object_orientation_source='topic', orientation_timeout=0.0099,
                     sensor_biases=S.BIASES.ravel().tolist())
    summary = analyze_bag(bag, config, tmp_path / 'out', Options(plots=False))
    stamps, squeeze, _ = _read(tmp_path / 'out')
    # the pose of sample 99 serves samples up to 9.9 ms later: 100..103 (2 ms period)
    expected_drops = [j for j in gap if (j - 99) * F.PERIOD_NS > 9_900_000]
    assert summary['dropped']['samples_without_orientation'] == len(expected_drops)
    assert not set(recording.stamps_ns[expected_drops].tolist()) & set(stamps.tolist())
    # the held samples analysed with a held (older) pose are off by at most the turn in 8 ms
    rows, want, _ = _truth_at(recording, stamps)
    exact = ~np.isin(rows, list(gap))
    np.testing.assert_allclose(squeeze[exact], want[exact], atol=1e-8)


def test_gravity_frame_without_an_orientation_source_is_refused():
    from wrench_distribution.engine import AnalysisEngine, StaticPoses
    config = _config()
    poses = StaticPoses(np.concatenate([F.POSITIONS, F.ORIENTATIONS], axis=1))
    with pytest.raises(ValueError, match="gravity_frame 'world'"):
        AnalysisEngine(config, poses)


def test_missing_pose_topic_in_the_bag_is_a_clear_error(tmp_path):
    bag = F.write_scenario_bag(tmp_path / 'bag', F.make_scenario(20))
    config = _config(object_orientation_source='topic')
    from wrench_distribution.bag.errors import BagError
    with pytest.raises(BagError, match='object_pose'):
        analyze_bag(bag, config, tmp_path / 'out', Options(plots=False))


def test_sensing_parameter_table_is_in_docs():
    from wrench_distribution.config.readme import sensing_table
    text = (ROOT / 'docs' / 'sensing.md').read_text()
    assert sensing_table() in text, ('docs/sensing.md parameter table is out of date: paste '
                                     'wrench_distribution.config.readme.sensing_table()')


def _unit(values) -> np.ndarray:
    q = np.asarray(values, float)
    return q / np.linalg.norm(q)


_QUAT = st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=4).filter(
    lambda q: np.linalg.norm(q) > 0.2).map(_unit)
_VEC = st.lists(st.floats(-0.1, 0.1), min_size=3, max_size=3)


@settings(max_examples=40, deadline=None)
@given(object_quats=st.lists(_QUAT, min_size=4, max_size=4),
       sensor_quats=st.lists(_QUAT, min_size=3, max_size=3),
       sensor_positions=st.lists(_VEC, min_size=3, max_size=3),
       signs=st.lists(st.sampled_from([-1, 1]), min_size=3, max_size=3),
       masses=st.lists(st.floats(0.0, 3.0), min_size=3, max_size=3),
       coms=st.lists(_VEC, min_size=3, max_size=3),
       biases=st.lists(st.floats(-10.0, 10.0), min_size=18, max_size=18),
       applied=st.lists(st.floats(-50.0, 50.0), min_size=18, max_size=18))
def test_tare_then_read_back_any_sensor_and_orientation(object_quats, sensor_quats,
                                                        sensor_positions, signs, masses, coms,
                                                        biases, applied):
    """Free samples in 3 orientations tare to the hand biases; a held one reads its resultant.

    The readings are made by hand for any sensor pose, sign, tool and object orientation;
    the reference resultant is the applied wrenches moved to the centre of mass by hand.
    """
    from wrench_distribution.engine import AnalysisEngine, HeldPoses, StaticPoses
    from wrench_distribution.engine.sensing import TareWindow
    from scipy.spatial.transform import Rotation
    biases = np.reshape(biases, (3, 6))
    applied = np.reshape(applied, (3, 6))
    applied[2, 3:] = 0.0  # the palm is a point contact: force only
    params = S.params(sensor_positions=np.ravel(sensor_positions).tolist(),
                      sensor_orientations=np.ravel(sensor_quats).tolist(), sensor_signs=signs,
                      tool_masses=masses, tool_coms=np.ravel(coms).tolist(),
                      object_orientation_source='topic')
    config = load_analyzer_config({'wrench_analyzer': {'ros__parameters': params}})
    stamps = np.arange(1, 5, dtype=np.int64) * 1_000_000
    orientation = HeldPoses(['object'], 'world')
    orientation.extend(stamps, np.array([[[0.0, 0.0, 0.0, *q]] for q in object_quats]))
    engine = AnalysisEngine(config, StaticPoses(np.concatenate([F.POSITIONS, F.ORIENTATIONS], 1)),
                            orientation=orientation)

    def reading(wrench: np.ndarray, object_quat, i: int) -> np.ndarray:
        rs = Rotation.from_quat(sensor_quats[i]).as_matrix()
        p = np.asarray(sensor_positions[i])
        g_contact = (Rotation.from_quat(object_quat) * Rotation.from_quat(F.ORIENTATIONS[i])
                     ).inv().apply(S.G_WORLD)
        weight = masses[i] * (g_contact @ rs)
        f_s = wrench[:3] @ rs
        t_s = (wrench[3:] - np.cross(p, wrench[:3])) @ rs
        tool = np.concatenate([weight, np.cross(coms[i], weight)])
        return signs[i] * (np.concatenate([f_s, t_s]) - tool) + biases[i]

    free = np.array([[reading(np.zeros(6), q, i) for i in range(3)] for q in object_quats[:3]])
    engine.record_tare(TareWindow(10))
    assert len(engine.analyze(stamps[:3], free)) == 3
    found, _, count = engine.tare('free')
    assert count == 3
    np.testing.assert_allclose(found, biases, atol=1e-9)
    engine.record_tare(None)
    engine.set_biases(found.ravel().tolist())
    held = np.array([[reading(applied[i], object_quats[3], i) for i in range(3)]])
    result = engine.analyze(stamps[3:], held)
    want = np.zeros(6)
    for i in range(3):  # by hand: f_o = R f, t_o = R t + (p - com) x f_o
        r = Rotation.from_quat(F.ORIENTATIONS[i])
        f_o = r.apply(applied[i, :3])
        t_o = r.apply(applied[i, 3:]) + np.cross(F.POSITIONS[i] - F.COM, f_o)
        want += np.concatenate([f_o, t_o])
    np.testing.assert_allclose(result.resultant[0], want, atol=1e-8)
