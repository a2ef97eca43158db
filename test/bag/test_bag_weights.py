"""``analyze-bag`` follows the contact weights recorded in a bag (docs/bags.md, "Contacts that come and go").

Bags written with rosbags hold the F/T streams of a trunk on four point feet and the
distributor's ``contact_weights/actual`` messages. References are independent of the bag path:
the feet's forces are written here from statics (the live feet hold the trunk's weight with no
moment about its centre of mass, plus a squeeze between two of them; a lifted foot reads
noise), the resultant of the live feet's forces by hand, the live path of the analysis engine
(one message at a time, the weights followed as they arrive: the node's path) and the read-out
of an analyzer configured without the released foot (what weight 0 must equal).
"""
from __future__ import annotations

import csv
from pathlib import Path
import tempfile
from xml.etree import ElementTree

from hypothesis import given, settings, strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.spatial.transform import Rotation

import bag_fixtures as F
from legs_fixtures import FEET, FOOT_POSITIONS, GRAVITY, TRUNK_MASS, UPRIGHT
from wrench_distribution.bag.errors import BagError
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.bag.samples import read_samples
from wrench_distribution.bag.summary import format_table
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.engine import AnalysisEngine, StaticPoses
from wrench_distribution.engine.contact_states import FollowedWeights

FT_TOPICS = [f'/{foot}/ft' for foot in FEET]
WEIGHTS_TOPIC = '/contact_weights/actual'
MULTI_ARRAY = 'std_msgs/msg/Float64MultiArray'
COM = np.array([0.02, -0.01, 0.0])
PARTS = ('manipulating', 'constraint', 'internal', 'invariant')
COMPONENTS = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')
#: a weights message is logged this long before the stamp of the first sample it applies to
LEAD_NS = 500_000


def trunk_config(keep=(True,) * 4, **extra):
    """Return the analyzer configuration of the trunk's feet ``keep`` (static poses, sensors at the feet)."""
    keep = np.asarray(keep, bool)
    params = {'effectors': [f for f, k in zip(FEET, keep) if k], 'contact_types': ['point'] * int(keep.sum()),
              'contact_source': 'static', 'contact_positions': FOOT_POSITIONS[keep].ravel().tolist(),
              'contact_orientations': UPRIGHT[keep].ravel().tolist(), 'object_com': COM.tolist(),
              'sync_tolerance': 0.001, 'max_age': 0.0,
              'ft_topics': [t for t, k in zip(FT_TOPICS, keep) if k]}
    params.update(extra)
    return load_analyzer_config(params)


def support(live: np.ndarray) -> np.ndarray:
    """Return (4, 3) vertical foot forces of least norm holding the trunk on the ``live`` feet, by hand.

    ``sum f = m g`` and no moment about the centre of mass (``sum (y_i - c_y) f_i = sum (x_i - c_x) f_i = 0``);
    on three feet off one line these fix the forces. A lifted foot carries nothing.
    """
    feet = np.flatnonzero(live)
    lever = FOOT_POSITIONS[feet] - COM
    equations = np.vstack([np.ones(len(feet)), lever[:, 1], lever[:, 0]])
    forces = np.zeros((4, 3))
    forces[feet, 2] = np.linalg.lstsq(equations, [TRUNK_MASS * GRAVITY, 0.0, 0.0], rcond=None)[0]
    return forces


def statics(live: np.ndarray, rng) -> np.ndarray:
    """Return (4, 3) foot forces (object axes) holding the trunk on the ``live`` feet, by hand.

    Vertical support of least norm with ``sum f = m g`` and no moment about the centre of mass
    (``sum (y_i - c_y) f_i = sum (x_i - c_x) f_i = 0``), a squeeze between two live feet (equal
    and opposite forces along their line), sensor noise; a lifted foot reads noise alone.
    """
    feet = np.flatnonzero(live)
    forces = support(live)
    a, b = rng.choice(feet, 2, replace=False)
    line = (FOOT_POSITIONS[b] - FOOT_POSITIONS[a]) / np.linalg.norm(FOOT_POSITIONS[b] - FOOT_POSITIONS[a])
    squeeze = rng.uniform(5.0, 30.0)
    forces[a] += squeeze * line
    forces[b] -= squeeze * line
    forces[feet] += rng.normal(0.0, 0.5, (len(feet), 3))
    forces[~live] = rng.normal(0.0, 0.2, (int((~live).sum()), 3))
    return forces


def by_hand(forces: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Return the resultant about the centre of mass of point forces: ``[sum f, sum (p - c) x f]``."""
    return np.concatenate([forces.sum(0), np.cross(positions - COM, forces).sum(0)])


def weights_msg(labels, values):
    """Return a labelled ``std_msgs/Float64MultiArray`` as the distributor publishes it (rosbags types)."""
    T = F.T
    dims = [T['std_msgs/msg/MultiArrayDimension'](label=';'.join(labels), size=len(values), stride=len(values))] \
        if labels is not None else []
    return T[MULTI_ARRAY](layout=T['std_msgs/msg/MultiArrayLayout'](dim=dims, data_offset=0),
                          data=np.array(values, float))


def stamp(j: int) -> int:
    return F.START_NS + j * F.PERIOD_NS


def write_bag(path: Path, forces: np.ndarray, messages=(), storage: str = 'sqlite3') -> Path:
    """Write the F/T streams (received 0.3 ms apart per foot) and the weights messages ``(sample, labels, values)``."""
    writer = F.BagWriter(path, storage)
    for j, sample in enumerate(forces):
        for i, foot in enumerate(FEET):
            writer.add(FT_TOPICS[i], F.WS, stamp(j) + 300_000 * (i + 1),
                       F.wrench_msg(stamp(j), f'{foot}_ft', [*sample[i], 0.0, 0.0, 0.0]))
    for j, labels, values in messages:
        writer.add(WEIGHTS_TOPIC, MULTI_ARRAY, stamp(j) - LEAD_NS, weights_msg(labels, values))
    return writer.close()


def schedule(k: int, foot: int, release: int, back: int) -> tuple:
    """Return the weights (k, 4) in force per sample and the messages setting them: ``foot`` out in [release, back)."""
    weights = np.ones((k, 4))
    weights[release:back, foot] = 0.0
    released = np.ones(4)
    released[foot] = 0.0
    messages = [(0, FEET, [1.0] * 4), (release, FEET, released.tolist()), (back, FEET, [1.0] * 4)]
    return weights, messages


def analyse(bag: Path, out: Path, config=None, **options) -> tuple:
    """Run ``analyze-bag``; return ``(summary, column -> values, metadata)``."""
    summary = analyze_bag(bag, config or trunk_config(), out, Options(plots=False, **options))
    table, meta = read_samples(out / 'samples.parquet')
    return summary, {name: table.column(name).to_numpy() for name in table.column_names}, meta


def wrench(columns: dict, foot: str, part: str) -> np.ndarray:
    return np.column_stack([columns[f'{foot}.{part}.{c}'] for c in COMPONENTS])


def live_read_out(forces: np.ndarray, messages) -> list:
    """Feed the live path message by message in receive order, the weights followed as they arrive.

    :return: per analysed sample ``(stamp, {quantity: row}, basis names)``.
    """
    engine = AnalysisEngine(trunk_config(), StaticPoses(np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)))
    follow = FollowedWeights(engine)
    events = [(stamp(j) + 300_000 * (i + 1), 1, (i, j)) for j in range(len(forces)) for i in range(4)]
    events += [(stamp(j) - LEAD_NS, 0, (labels, values)) for j, labels, values in messages]
    out = []
    for recv, kind, what in sorted(events, key=lambda e: e[:2]):
        if kind == 0:
            assert follow.offer(*what) is None
            continue
        i, j = what
        for sample in engine.offer(i, stamp(j), [*forces[j, i], 0, 0, 0], recv, f'{FEET[i]}_ft').samples:
            values = {name: np.asarray(sample.result.values[name])[0] for name in
                      PARTS + ('resultant', 'internal_load', 'internal_load_norm')}
            out.append((sample.stamp_ns, values, list(sample.distributor.basis_names)))
    return out


def check_follows(columns: dict, forces: np.ndarray, weights: np.ndarray, messages) -> None:
    """Check the bag's read-out against the live path, the statics by hand and the weights in force."""
    live = live_read_out(forces, messages)
    np.testing.assert_array_equal(columns['stamp_ns'], [s for s, _, _ in live])
    load_columns = [name for name in columns if name.startswith('internal_load.')]
    for j, (_, values, basis) in enumerate(live):
        for i, foot in enumerate(FEET):
            assert columns[f'{foot}.contact_weight'][j] == weights[j, i]
            for part in PARTS:
                row = wrench(columns, foot, part)[j]
                np.testing.assert_allclose(row, values[part][i], rtol=1e-9, atol=1e-9)
                if weights[j, i] == 0.0:
                    assert not row.any(), (foot, part)   # released: exactly zero
        named = {f'internal_load.{name}': value for name, value in zip(basis, values['internal_load'])}
        for name in load_columns:   # the elements of the sample's solve, NaN for the others
            if name in named:
                np.testing.assert_allclose(columns[name][j], named[name], rtol=1e-9, atol=1e-9)
            else:
                assert np.isnan(columns[name][j]), name
        assert set(named) <= set(load_columns)
        np.testing.assert_allclose(columns['internal_load_norm'][j], values['internal_load_norm'], rtol=1e-9)
        keep = weights[j] > 0
        resultant = np.column_stack([columns[f'resultant.{c}'] for c in COMPONENTS])[j]
        np.testing.assert_allclose(resultant, by_hand(forces[j, keep], FOOT_POSITIONS[keep]), rtol=1e-9, atol=1e-9)


def check_without(columns: dict, forces: np.ndarray, weights: np.ndarray, foot: int) -> None:
    """Check that weight 0 reads out as an analyzer configured without that foot (an independent configuration)."""
    keep = np.arange(4) != foot
    rows = np.flatnonzero(weights[:, foot] == 0.0)
    alone = AnalysisEngine(trunk_config(keep), StaticPoses(np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)[keep]))
    readings = np.concatenate([forces[rows][:, keep], np.zeros((len(rows), 3, 3))], axis=2)
    result = alone.analyze(columns['stamp_ns'][rows], readings)
    assert len(result) == len(rows)
    for k, name in enumerate(alone.basis_names):
        np.testing.assert_allclose(columns[f'internal_load.{name}'][rows], result.internal_load[:, k],
                                   rtol=1e-8, atol=1e-8)
    for part in PARTS:
        for column, i in enumerate(np.flatnonzero(keep)):
            np.testing.assert_allclose(wrench(columns, FEET[i], part)[rows], result.values[part][:, column],
                                       rtol=1e-8, atol=1e-8)
    resultant = np.column_stack([columns[f'resultant.{c}'] for c in COMPONENTS])[rows]
    np.testing.assert_allclose(resultant, result.resultant, rtol=1e-9, atol=1e-9)


def test_a_foot_released_mid_bag_and_back(tmp_path):
    k, foot, release, back = 40, 0, 12, 27
    rng = np.random.default_rng(4)
    weights, messages = schedule(k, foot, release, back)
    weights[release - 4:release, foot] = 0.5   # a ramp's step: lf carries half its share
    messages.insert(1, (release - 4, ['lf'], [0.5]))
    forces = np.array([statics(w > 0, rng) for w in weights])
    bag = write_bag(tmp_path / 'bag', forces, messages, 'mcap')
    summary, columns, meta = analyse(bag, tmp_path / 'out', chunk=7, csv=True)
    check_follows(columns, forces, weights, messages)
    check_without(columns, forces, weights, foot)
    followed = summary['contact_weights']
    assert followed['followed'] and followed['topic'] == WEIGHTS_TOPIC and followed['messages'] == 4
    assert followed['changes'] == 3 and followed['refused'] == 0
    half, out, back_in = followed['listed_changes']
    assert half['weights'] == {'lf': 0.5, 'rf': 1.0, 'lh': 1.0, 'rh': 1.0} and half['released'] == []
    assert out['released'] == ['lf'] and out['returned'] == [] and out['weights']['lf'] == 0.0
    assert back_in['returned'] == ['lf'] and back_in['released'] == []
    assert abs(out['time_s'] - (stamp(release) - LEAD_NS) * 1e-9) < 1e-6
    assert abs(back_in['time_s'] - (stamp(back) - LEAD_NS) * 1e-9) < 1e-6
    table = format_table(summary)
    assert f'weights        followed {WEIGHTS_TOPIC}: 3 changes, 0 messages refused' in table
    assert f"weights        {out['time_s']:.6f} s: lf released" in table
    # one table: the union of the bases, named in the metadata and the summary, in column order
    names = [name[len('internal_load.'):] for name in columns if name.startswith('internal_load.')]
    assert meta['basis_names'] == names == list(summary['internal_load'])
    assert meta['followed_weights'] is True
    assert list(columns)[-4:] == [f'{f}.contact_weight' for f in FEET]
    in_solve = ~np.isnan(np.column_stack([columns[f'internal_load.{n}'] for n in names]))
    for j, name in enumerate(names):   # the summary counts the samples each element was in the solve
        assert summary['internal_load'][name]['count'] == int(in_solve[:, j].sum())
        assert ('lf' in name) <= bool(in_solve[:, j].sum() == k - (back - release))
    with open(tmp_path / 'out' / 'samples.csv', newline='') as text:
        rows = list(csv.reader(text))
    assert rows[0] == ['stamp'] + list(columns)[1:] and len(rows) == k + 1
    np.testing.assert_array_equal(np.array(rows[1:], float)[:, 1:],
                                  np.column_stack([columns[c] for c in list(columns)[1:]]))
    assert not [p.name for p in (tmp_path / 'out').iterdir() if p.name.startswith('.')]
    # the PlotJuggler layout plots the weights (CSV columns), every element of the union too
    layout = ElementTree.parse(tmp_path / 'out' / 'plotjuggler_layout.xml').getroot()
    tabs = {tab.get('tab_name'): [curve.get('name') for curve in tab.iter('curve')] for tab in layout.iter('Tab')}
    assert tabs['contact weights'] == [f'{f}.contact_weight' for f in FEET]
    assert {f'internal_load.{n}' for n in names} <= set(tabs['internal load']) <= set(rows[0])


def test_one_chunk_or_many_give_the_same_table(tmp_path):
    rng = np.random.default_rng(5)
    weights, messages = schedule(30, 2, 9, 21)
    forces = np.array([statics(w > 0, rng) for w in weights])
    bag = write_bag(tmp_path / 'bag', forces, messages)
    many = pq.read_table(analyse(bag, tmp_path / 'many', chunk=5)[0] and tmp_path / 'many' / 'samples.parquet')
    one = pq.read_table(analyse(bag, tmp_path / 'one', chunk=100_000)[0] and tmp_path / 'one' / 'samples.parquet')
    assert many.column_names == one.column_names
    for name in one.column_names:   # products over other batch sizes: the last bit may differ; NaN alike
        np.testing.assert_allclose(many.column(name).to_numpy(), one.column(name).to_numpy(), rtol=1e-12,
                                   atol=1e-12)


@settings(max_examples=6, deadline=None)
@given(foot=st.integers(0, 3), release=st.integers(1, 12), length=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_any_foot_released_anywhere(foot, release, length, seed):
    k = 26
    back = min(release + length, k - 1)
    rng = np.random.default_rng(seed)
    weights, messages = schedule(k, foot, release, back)
    forces = np.array([statics(w > 0, rng) for w in weights])
    with tempfile.TemporaryDirectory() as where:
        bag = write_bag(Path(where) / 'bag', forces, messages)
        summary, columns, _ = analyse(bag, Path(where) / 'out', chunk=9)
    check_follows(columns, forces, weights, messages)
    check_without(columns, forces, weights, foot)
    assert summary['contact_weights']['changes'] == 2


def test_a_bag_without_weights_reads_out_as_before(tmp_path):
    """No weights topic: today's columns and values (every weight 1); weights all 1 recorded: the same values."""
    rng = np.random.default_rng(6)
    forces = np.array([statics(np.ones(4, bool), rng) for _ in range(20)])
    summary, plain, meta = analyse(write_bag(tmp_path / 'plain', forces), tmp_path / 'a')
    assert summary['contact_weights'] == {'followed': False, 'topic': WEIGHTS_TOPIC,
                                          'reason': 'the bag does not hold this topic: every weight 1'}
    assert 'followed_weights' not in meta and not any(name.endswith('contact_weight') for name in plain)
    engine = AnalysisEngine(trunk_config(), StaticPoses(np.concatenate([FOOT_POSITIONS, UPRIGHT], axis=1)))
    assert [name[len('internal_load.'):] for name in plain if name.startswith('internal_load.')] == \
        meta['basis_names'] == (engine.check_static(FOOT_POSITIONS, UPRIGHT) or engine.basis_names)
    for j, (_, values, _) in enumerate(live_read_out(forces, [])):
        np.testing.assert_allclose(plain['internal_load_norm'][j], values['internal_load_norm'], rtol=1e-9)
        for i, foot in enumerate(FEET):
            np.testing.assert_allclose(wrench(plain, foot, 'constraint')[j], values['constraint'][i],
                                       rtol=1e-9, atol=1e-9)
    ones = write_bag(tmp_path / 'ones', forces, [(0, FEET, [1.0] * 4), (9, ['rf'], [1.0])])
    summary, followed, _ = analyse(ones, tmp_path / 'b')
    assert summary['contact_weights']['changes'] == 0
    for name, values in plain.items():
        np.testing.assert_array_equal(followed[name], values)
    off = analyse(ones, tmp_path / 'c', trunk_config(actual_weights_topic=''))
    assert off[0]['contact_weights']['followed'] is False and off[1].keys() == plain.keys()


def test_bad_weights_messages_are_reported_and_change_nothing(tmp_path):
    rng = np.random.default_rng(8)
    weights, messages = schedule(30, 1, 8, 20)
    forces = np.array([statics(w > 0, rng) for w in weights])
    bad = [(4, ['lf', 'xx'], [0.0, 1.0]), (12, FEET, [1.0, np.nan, 1.0, 1.0]), (14, FEET, [0.0] * 4),
           (16, None, [1.0] * 4), (18, FEET, [1.0, 1.5, 1.0, 1.0]), (29, ['lh'], [np.inf])]
    clean = analyse(write_bag(tmp_path / 'clean', forces, messages), tmp_path / 'a')[1]
    summary, columns, _ = analyse(write_bag(tmp_path / 'bad', forces, messages + bad), tmp_path / 'b')
    for name, values in clean.items():
        np.testing.assert_array_equal(columns[name], values)
    followed = summary['contact_weights']
    assert followed['refused'] == len(bad) and followed['changes'] == 2
    reasons = [r['reason'] for r in followed['listed_refused']]
    for why, reason in zip(('each label must be one of', 'NaN', 'every weight 0', 'no layout label',
                            'must be in [0, 1]', 'NaN'), reasons):
        assert why in reason and reason.startswith('contact weights not followed')
    np.testing.assert_allclose([r['time_s'] for r in followed['listed_refused']],
                               [(stamp(j) - LEAD_NS) * 1e-9 for j, _, _ in bad], atol=1e-6)


def test_measured_states_against_the_commanded_weights(tmp_path):
    """Each finding where the scenario puts it: the feet's forces written by hand against the weights."""
    k = 40
    weights, messages = schedule(k, 0, 10, 30)
    # the same statics at every sample of a set of feet: no noise learned, the thresholds are the floor
    forces = np.array([statics(w > 0, np.random.default_rng(9)) for w in weights])
    forces[10:30, 0] = 0.0                  # lf lifted while released...
    forces[10:13, 0] = [0.0, 0.0, 60.0]    # ...after it did not lift at first
    forces[18:20, 0] = [0.0, 0.0, 40.0]    # lifted since, loaded again while released: early touchdown
    forces[24, 2] = 0.0                     # lh carrying reads nothing: lost contact
    forces[30:33, 0] = 0.0                  # lf back at weight 1, not loaded yet: did not touch down
    summary, columns, _ = analyse(write_bag(tmp_path / 'bag', forces, messages), tmp_path / 'out', chunk=11)
    states = summary['contact_weights']['contact_states']
    found = [(int(round((f['time_s'] - F.START_NS * 1e-9) / (F.PERIOD_NS * 1e-9))), f['contact'], f['finding'],
              f['commanded']) for f in states['listed']]
    assert found == [(10, 'lf', 'did not lift', 'released'), (18, 'lf', 'early touchdown', 'released'),
                     (24, 'lh', 'lost contact', 'carrying'), (30, 'lf', 'did not touch down', 'carrying')]
    assert states['findings'] == 4 and states['final'] == dict.fromkeys(FEET, 'loaded')
    assert states['loaded_above'] == [1.0] * 4 and states['free_below'] == [0.5] * 4   # contact_loaded_force
    assert not wrench(columns, 'lf', 'constraint')[10:30].any()      # the released foot stays out of the read-out


def test_a_weights_topic_of_another_type_is_an_error(tmp_path):
    rng = np.random.default_rng(10)
    forces = np.array([statics(np.ones(4, bool), rng) for _ in range(10)])
    bag = write_bag(tmp_path / 'bag', forces)
    writer = F.BagWriter(tmp_path / 'typed')
    for j, sample in enumerate(forces):
        for i, foot in enumerate(FEET):
            writer.add(FT_TOPICS[i], F.WS, stamp(j) + 300_000 * (i + 1),
                       F.wrench_msg(stamp(j), f'{foot}_ft', [*sample[i], 0.0, 0.0, 0.0]))
    writer.add(WEIGHTS_TOPIC, F.WS, stamp(3), F.wrench_msg(stamp(3), 'lf_ft', [0.0] * 6))
    with pytest.raises(BagError, match=f'{WEIGHTS_TOPIC} .*expected {MULTI_ARRAY}'):
        analyze_bag(writer.close(), trunk_config(), tmp_path / 'out', Options(plots=False))
    assert not (tmp_path / 'out').exists()
    summary = analyze_bag(bag, trunk_config(), tmp_path / 'plain', Options(plots=False))
    assert 'weights        not followed: the bag does not hold this topic' in format_table(summary)


def arms_config(keep=(True,) * 3):
    """Return the analyzer configuration of the three-arm object of the bag fixtures, the arms ``keep`` only."""
    params = F.params()['wrench_analyzer']['ros__parameters']
    keep = np.asarray(keep, bool)
    for key, width in (('effectors', 1), ('contact_types', 1), ('contact_frames', 1), ('sensor_signs', 1),
                       ('tool_masses', 1), ('contact_positions', 3), ('contact_orientations', 4),
                       ('sensor_positions', 3), ('sensor_orientations', 4), ('tool_coms', 3)):
        params[key] = np.asarray(params[key], dtype=object).reshape(-1, width)[keep].ravel().tolist()
    return load_analyzer_config(params)


@pytest.mark.parametrize('arm', range(3))
def test_three_arms_one_released_and_back(tmp_path, arm):
    """Rigid and point contacts, turned frames, sensors offset, tools weighed: the sensor readings by hand."""
    k, release, back = 24, 8, 16
    rng = np.random.default_rng(arm)
    applied = rng.normal(0.0, 5.0, (k, 3, 6)) * [1, 1, 1, 0.2, 0.2, 0.2]   # contact frames, about the contact
    applied[:, 2, 3:] = 0.0                                                 # the palm is a point contact
    weights = np.ones((k, 3))
    weights[release:back, arm] = 0.0
    name = F.EFFECTORS[arm]
    writer = F.BagWriter(tmp_path / 'bag')
    for j in range(k):
        for i, effector in enumerate(F.EFFECTORS):
            reading = F.to_sensor(applied[j, i], F.ORIENTATIONS[i], i)
            writer.add(f'/{effector}/ft_sensor', F.WS, stamp(j) + 300_000 * (i + 1),
                       F.wrench_msg(stamp(j), f'{effector}_ft', reading))
    for j, value in ((release, 0.0), (back, 1.0)):
        writer.add(WEIGHTS_TOPIC, MULTI_ARRAY, stamp(j) - LEAD_NS, weights_msg([name], [value]))
    summary, columns, _ = analyse(writer.close(), tmp_path / 'out', arms_config(), chunk=7)
    assert summary['contact_weights']['changes'] == 2
    turned = [Rotation.from_quat(q) for q in F.ORIENTATIONS]
    for j in range(k):
        live = weights[j] > 0
        forces = np.array([turned[i].apply(applied[j, i, :3]) for i in range(3)])
        torques = np.array([turned[i].apply(applied[j, i, 3:]) for i in range(3)])
        expected = np.concatenate([forces[live].sum(0), (np.cross(F.POSITIONS[live] - F.COM, forces[live])
                                                         + torques[live]).sum(0)])
        resultant = np.array([columns[f'resultant.{c}'][j] for c in COMPONENTS])
        np.testing.assert_allclose(resultant, expected, rtol=1e-9, atol=1e-9)
    rows = np.arange(release, back)
    keep = np.arange(3) != arm
    alone = AnalysisEngine(arms_config(keep), StaticPoses(np.concatenate([F.POSITIONS, F.ORIENTATIONS], axis=1)[keep]))
    readings = np.array([[F.to_sensor(applied[j, i], F.ORIENTATIONS[i], i) for i in range(3)] for j in rows])
    result = alone.analyze(columns['stamp_ns'][rows], readings[:, keep])
    assert len(result) == len(rows)
    for m, element in enumerate(alone.basis_names):
        np.testing.assert_allclose(columns[f'internal_load.{element}'][rows], result.internal_load[:, m],
                                   rtol=1e-8, atol=1e-8)
    for part in PARTS:
        assert not wrench(columns, name, part)[rows].any()
        for m, i in enumerate(np.flatnonzero(keep)):
            np.testing.assert_allclose(wrench(columns, F.EFFECTORS[i], part)[rows], result.values[part][:, m],
                                       rtol=1e-8, atol=1e-8)


def held_at_rest(live: np.ndarray, rng) -> np.ndarray:
    """Return (4, 3) foot forces holding the trunk at rest on the ``live`` feet (:func:`support`), with noise."""
    return support(live) + rng.normal(0.0, 0.01, (4, 3))


def biased_bag(path: Path, forces: np.ndarray, biases: np.ndarray, messages) -> Path:
    """Write the feet's readings (forces, no torque, plus each sensor's bias) and the weights messages."""
    writer = F.BagWriter(path)
    for j, sample in enumerate(forces):
        for i, foot in enumerate(FEET):
            writer.add(FT_TOPICS[i], F.WS, stamp(j) + 300_000 * (i + 1),
                       F.wrench_msg(stamp(j), f'{foot}_ft', np.r_[sample[i], 0.0, 0.0, 0.0] + biases[i]))
    for j, labels, values in messages:
        writer.add(WEIGHTS_TOPIC, MULTI_ARRAY, stamp(j) - LEAD_NS, weights_msg(labels, values))
    return writer.close()


def window(first: int, last: int) -> tuple:
    """Return the ``--tare`` window of samples ``first`` to ``last`` (seconds from the first stamp)."""
    return ((first * F.PERIOD_NS - LEAD_NS) * 1e-9, (last * F.PERIOD_NS + LEAD_NS) * 1e-9, False)


@pytest.mark.parametrize('foot', range(4))
def test_a_held_tare_with_a_foot_lifted_finds_every_sensors_bias(tmp_path, foot):
    """The object's weight is on the three feet that carry; the lifted foot's sensor reads its bias alone."""
    rng = np.random.default_rng(foot)
    k, release, back = 60, 5, 50
    weights, messages = schedule(k, foot, release, back)
    forces = np.array([held_at_rest(row > 0, rng) for row in weights])
    biases = rng.uniform(-3.0, 3.0, (4, 6)) * [1, 1, 1, 0.1, 0.1, 0.1]
    bag = biased_bag(tmp_path / 'bag', forces, biases, messages)
    config = trunk_config(tare_state='held', object_mass=TRUNK_MASS)
    summary = analyze_bag(bag, config, tmp_path / 'out', Options(plots=False, tare=window(10, 40)))
    tare = summary['tare']
    assert tare['samples'] == 31
    assert tare['contact_weights'] == {name: float(name != FEET[foot]) for name in FEET}
    np.testing.assert_allclose(np.reshape(tare['sensor_biases'], (4, 6)), biases, atol=0.01)


def test_a_held_tare_over_a_foot_leaving_is_refused_with_the_sample(tmp_path):
    """A window in which a foot leaves holds two distributions of the weight: refused, nothing written."""
    rng = np.random.default_rng(7)
    k, release, back = 60, 25, 50
    weights, messages = schedule(k, 1, release, back)
    forces = np.array([held_at_rest(row > 0, rng) for row in weights])
    bag = biased_bag(tmp_path / 'bag', forces, np.zeros((4, 6)), messages)
    config = trunk_config(tare_state='held', object_mass=TRUNK_MASS)
    with pytest.raises(BagError, match=rf'--tare .*the contact weights changed within the tare window \(at the sample '
                                       rf'stamped {stamp(release) * 1e-9:.6f} s, from 1, 1, 1, 1 to 1, 0, 1, 1\)'):
        analyze_bag(bag, config, tmp_path / 'out', Options(plots=False, tare=window(10, 40)))
    assert not (tmp_path / 'out' / 'samples.parquet').exists()
    summary = analyze_bag(bag, config, tmp_path / 'before', Options(plots=False, tare=window(10, 20)))
    assert summary['tare']['contact_weights'] == dict.fromkeys(FEET, 1.0)
