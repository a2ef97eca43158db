"""Offline bag analysis against bags written from a known distribution."""
from __future__ import annotations

import argparse
import csv
from decimal import Decimal
import importlib.metadata
import json
from pathlib import Path
import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from scipy.spatial.transform import Rotation

import bag_fixtures as F
from wrench_distribution.bag import command
from wrench_distribution.bag.pipeline import analyze_bag, Options
from wrench_distribution.bag.samples import csv_table, read_samples
from wrench_distribution.config import load_analyzer_config
from wrench_distribution.core import LoadDistributor
from wrench_distribution.engine.sync import StampSynchronizer

PARTS = ('manipulating', 'constraint', 'internal', 'invariant')
COMP = ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return command.run(parser.parse_args([str(a) for a in argv]))


def read_csv(path: Path) -> tuple[list[str], np.ndarray, list[str]]:
    """Header, values (stamp column included) and the stamp column as text."""
    with open(path, newline='') as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return header, np.array([[float(v) for v in r] for r in body]), [r[0] for r in body]


def read_parquet(out: Path) -> tuple[list[str], np.ndarray, list[int]]:
    """Column names, values (stamp column included, as float) and the int64 stamps."""
    table, _ = read_samples(out / 'samples.parquet')
    values = np.column_stack([table.column(j).to_numpy().astype(float)
                              for j in range(table.num_columns)])
    return table.column_names, values, table.column('stamp_ns').to_pylist()


def col(header, values, name):
    return values[:, header.index(name)]


def wrench(header, values, eff, part):
    return np.column_stack([col(header, values, f'{eff}.{part}.{c}') for c in COMP])


def check_against_truth(out: Path, sc: F.Scenario, rows=None, atol=1e-8):
    header, values, stamps = read_parquet(out)
    rows = np.arange(len(sc.stamps_ns)) if rows is None else np.asarray(rows)
    assert len(values) == len(rows)
    # stamps are the header stamps, exactly, not the (later) receive times
    assert stamps == sc.stamps_ns[rows].tolist()
    res = np.column_stack([col(header, values, f'resultant.{c}') for c in COMP])
    np.testing.assert_allclose(res, sc.resultant[rows], atol=atol)
    lam_names = [h for h in header if h.startswith('internal_load.')]
    assert f'internal_load.{F.SQUEEZE}' in lam_names
    for name in lam_names:
        expected = sc.squeeze[rows] if name == f'internal_load.{F.SQUEEZE}' else 0.0
        np.testing.assert_allclose(col(header, values, name), expected, atol=atol, err_msg=name)
    for i, eff in enumerate(F.EFFECTORS):
        man = wrench(header, values, eff, 'manipulating')
        con = wrench(header, values, eff, 'constraint')
        # eq. 80: h_c = h_m - h, with h the applied wrench (contact frame, about the contact)
        np.testing.assert_allclose(man - con, sc.applied[rows, i], atol=atol, err_msg=eff)
    # the constraint part of left and right is the squeeze, with the sign of eq. 80
    u = sc.poses[rows, 1, :3] - sc.poses[rows, 0, :3]
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    for i, sign in ((0, -1.0), (1, 1.0)):
        f_obj = sign * sc.squeeze[rows, None] * u
        f_contact = np.array([Rotation.from_quat(q).inv().apply(f)
                              for q, f in zip(sc.poses[rows, i, 3:], f_obj)])
        con = wrench(header, values, F.EFFECTORS[i], 'constraint')
        np.testing.assert_allclose(con[:, :3], f_contact, atol=atol)
        np.testing.assert_allclose(con[:, 3:], 0.0, atol=atol)
    return header, values


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_static_contacts_recover_resultant_and_squeeze(tmp_path, storage, capsys):
    sc = F.make_scenario(150)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, storage)
    cfg = F.write_params(tmp_path / 'params.yaml', 'static')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--csv') == 0
    out = tmp_path / 'out'
    check_against_truth(out, sc)
    check_csv_equals_parquet(out)
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['samples'] == 150
    assert summary['storage'] == storage
    assert summary['time_span']['duration'] == pytest.approx(149 * F.PERIOD_NS * 1e-9)
    assert summary['time_span']['start'] == pytest.approx(F.START_NS * 1e-9)
    assert summary['gaps']['count'] == 0
    assert summary['dropped']['unsynchronised_messages'] == 0
    assert summary['max_resultant_residual'] < 1e-9
    sq = summary['internal_load'][F.SQUEEZE]
    assert sq['unit'] == 'N'
    assert sq['mean'] == pytest.approx(sc.squeeze.mean(), rel=1e-9)
    assert sq['max'] == pytest.approx(sc.squeeze.max(), rel=1e-9)
    assert sq['min'] == pytest.approx(sc.squeeze.min(), rel=1e-9)
    assert sq['std'] == pytest.approx(sc.squeeze.std(), rel=1e-6)
    # the table is printed
    printed = capsys.readouterr().out
    assert 'samples        150' in printed and F.SQUEEZE in printed
    # plots are PNG files, the layout names CSV columns
    for png in ('internal_load.png', 'constraint_wrenches.png'):
        assert (out / png).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert summary['outputs'][:2] == ['samples.parquet', 'samples.csv']
    header = read_csv(out / 'samples.csv')[0]
    root = ET.parse(out / 'plotjuggler_layout.xml').getroot()
    curves = [c.get('name') for c in root.iter('curve')]
    assert curves and set(curves) <= set(header)
    assert [tab.get('tab_name') for tab in root.iter('Tab')] == ['internal load', *F.EFFECTORS]  # no weights
    assert root.find('./previouslyLoaded_Datafiles/fileInfo').get('filename') == 'samples.csv'


def test_header_columns(tmp_path):
    sc = F.make_scenario(5)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3')
    cfg = F.write_params(tmp_path / 'params.yaml')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    out = tmp_path / 'out'
    assert not (out / 'samples.csv').exists()  # Parquet only, unless --csv
    table, meta = read_samples(out / 'samples.parquet')
    header = table.column_names
    expected = ['stamp_ns'] + [f'{e}.{p}.{c}' for p in PARTS for e in F.EFFECTORS for c in COMP]
    expected += [f'resultant.{c}' for c in COMP]
    assert header[:len(expected)] == expected
    lam = header[len(expected):]
    assert lam[-3:] == ['internal_load_norm', 'invariant_norm', 'residual']
    lam = lam[:-1]
    assert all(h.startswith('internal_load.') for h in lam[:-2]) and len(lam) - 2 == 9
    assert not (out / 'internal_load.png').exists()
    # typed columns with units; the stamp is int64 nanoseconds
    sch = table.schema
    assert sch.field('stamp_ns').type == pa.int64()
    assert sch.field('stamp_ns').metadata[b'unit'] == b'ns'
    assert all(sch.field(h).type == pa.float64() for h in header[1:])
    assert sch.field('palm.constraint.fz').metadata[b'unit'] == b'N'
    assert sch.field('resultant.ty').metadata[b'unit'] == b'N*m'
    assert sch.field(f'internal_load.{F.SQUEEZE}').metadata[b'unit'] == b'N'
    # the metadata: basis, units, configuration, package version
    assert meta['basis_names'] == [h[len('internal_load.'):] for h in lam[:-2]]
    assert len(meta['basis_units']) == 9 and set(meta['basis_units']) <= {'N', 'N*m'}
    assert meta['effectors'] == F.EFFECTORS and meta['output_frame'] == 'contact'
    assert meta['parameters']['object_mass'] == F.MASS
    assert meta['parameters']['sensor_signs'] == F.SENSOR_SIGNS
    assert meta['package_version'] == importlib.metadata.version('wrench_distribution')
    assert meta['bag'] == str(bag) and meta['storage'] == 'sqlite3'


def test_storage_file_and_nan_reading(tmp_path):
    """The storage file may be given for its bag; a NaN reading is rejected and counted."""
    sc = F.make_scenario(30, seed=6)
    sc.readings[10, 2, 4] = np.nan
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap')
    cfg = F.write_params(tmp_path / 'params.yaml')
    mcap = next(bag.glob('*.mcap'))
    assert run_cli(mcap, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    keep = np.ones(30, bool)
    keep[10] = False
    check_against_truth(tmp_path / 'out', sc, rows=np.flatnonzero(keep))
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['storage'] == 'mcap' and summary['bag'] == str(bag)
    assert summary['dropped']['per_effector']['palm']['rejected_nan'] == 1


def test_pose_array_topic(tmp_path):
    sc = F.make_scenario(120, seed=3)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3', poses='topic')
    cfg = F.write_params(tmp_path / 'params.yaml', 'topic')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    check_against_truth(tmp_path / 'out', sc)
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['contact_poses'] == 'PoseArray topic /contact_poses'
    assert summary['distributors_built'] == 1


def test_moving_contacts_from_tf_are_interpolated(tmp_path):
    # /tf every 10 samples; the contacts move linearly and turn at a constant rate,
    # so linear + slerp interpolation is exact between the recorded transforms
    sc = F.make_scenario(41, moving=True, seed=5, period_ns=10_000_000)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap', poses='tf', pose_period=10)
    cfg = F.write_params(tmp_path / 'params.yaml', 'tf')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    check_against_truth(tmp_path / 'out', sc, atol=1e-7)
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['distributors_built'] == 41


def test_dropped_message_and_gap(tmp_path):
    sc = F.make_scenario(200, seed=1)
    keep = np.ones(200, bool)
    keep[100:120] = False  # a gap of 20 samples: nothing recorded
    drop = [(50, 1)] + [(j, i) for j in range(100, 120) for i in range(3)]
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3', drop=drop)
    cfg = F.write_params(tmp_path / 'params.yaml')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    keep[50] = False  # right is missing: no sample at that stamp
    check_against_truth(tmp_path / 'out', sc, rows=np.flatnonzero(keep))
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert summary['samples'] == 179
    # left and palm of sample 50 never found a partner
    per = summary['dropped']['per_effector']
    assert [per[e]['unsynchronised'] for e in F.EFFECTORS] == [1, 0, 1]
    assert per['right']['received'] == 179
    gaps = summary['gaps']
    assert gaps['count'] == 1  # 100..119; sample 50 alone (2 periods) is no gap
    assert gaps['listed'][0]['duration'] == pytest.approx(21 * F.PERIOD_NS * 1e-9)
    assert gaps['listed'][0]['start'] == pytest.approx(sc.stamps_ns[99] * 1e-9)


def test_chunking_does_not_change_the_result(tmp_path):
    sc = F.make_scenario(60, seed=2)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap', drop=[(7, 2), (30, 0)])
    cfg = F.write_params(tmp_path / 'params.yaml')
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'a', '--no-plots') == 0
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'b', '--no-plots',
                   '--chunk', '7') == 0
    # the same with the CSV, through the library call
    config = load_analyzer_config(cfg)
    analyze_bag(bag, config, tmp_path / 'c', Options(chunk=11, csv=True, plots=False))
    check_csv_equals_parquet(tmp_path / 'c')
    ha, a, sa = read_parquet(tmp_path / 'a')
    for other in ('b', 'c'):
        hb, b, sb = read_parquet(tmp_path / other)
        assert ha == hb and sa == sb and len(a) == 58
        # batches of another size round differently in the last bit (BLAS blocking)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    # one row group per analysis chunk: memory is bounded by the chunk, not the bag
    groups = pq.ParquetFile(tmp_path / 'c' / 'samples.parquet').metadata
    rows = [groups.row_group(j).num_rows for j in range(groups.num_row_groups)]
    assert sum(rows) == 58 and len(rows) >= 58 * 3 // 11 - 1 and max(rows) <= 11 // 3 + 1
    assert pq.ParquetFile(tmp_path / 'a' / 'samples.parquet').metadata.num_row_groups == 1


def test_directory_of_bags_in_parallel(tmp_path, capsys):
    sc = F.make_scenario(40, seed=4)
    F.write_scenario_bag(tmp_path / 'bags' / 'run1', sc, 'sqlite3')
    F.write_scenario_bag(tmp_path / 'bags' / 'day2' / 'run2', sc, 'mcap')
    cfg = F.write_params(tmp_path / 'params.yaml')
    assert run_cli(tmp_path / 'bags', '--config', cfg, '--out', tmp_path / 'out',
                   '--no-plots', '--jobs', '2') == 0
    for rel in ('run1', 'day2/run2'):
        check_against_truth(tmp_path / 'out' / rel, sc)
    index = pq.read_table(tmp_path / 'out' / 'index.parquet').to_pylist()
    assert [e['samples'] for e in index] == [40, 40] and all(e['error'] is None for e in index)
    assert 'run2' in capsys.readouterr().out


def test_sync_pairs_stamps_within_tolerance_and_uses_the_newest():
    sync = StampSynchronizer(2, tolerance_ns=1000)
    stream = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    stamp = np.array([10_000, 10_400, 20_000, 21_500, 30_000, 30_999, 40_000, 41_000])
    wrench = np.arange(48.0).reshape(8, 6)
    wrench[6, 2] = np.nan  # rejected: stream 1 has nothing fresh for 41_000
    # split in two chunks: a reading waits across the boundary
    st1, m1 = sync.push(stream[:5], stamp[:5] + 5, stamp[:5], wrench[:5])
    st2, m2 = sync.push(stream[5:], stamp[5:] + 5, stamp[5:], wrench[5:])
    sync.finish()
    assert st1.tolist() == [10_400] and st2.tolist() == [30_999]
    np.testing.assert_array_equal(m2[0], wrench[[4, 5]])
    # 20_000 is dropped (oldest, skew 1500 > 1000) when 21_500 fills the slots, then
    # 21_500 when 30_000 arrives; 41_000 is left waiting at the end
    assert sync.counters.unsynchronised.tolist() == [2, 1]
    assert sync.counters.rejected_nan.tolist() == [0, 1]


def test_csv_stamps_are_exact_decimal_seconds(tmp_path):
    """The CSV stamp is the int64 stamp in seconds, digit for digit; values round-trip."""
    ns = np.array([0, 1, 999, 10**6, 10**9 - 1, 10**9, 1_700_000_000_123_456_789, 2**62, -5])
    x = np.array([0.1, -0.0, 1e-300, np.nan, np.inf, -np.inf, 1 / 3, 5e300, 2.0])
    table = pa.table({'stamp_ns': pa.array(ns, pa.int64()), 'x': x})
    pa_csv.write_csv(csv_table(table), tmp_path / 's.csv')
    header, values, stamps = read_csv(tmp_path / 's.csv')
    assert header == ['stamp', 'x']
    assert [Decimal(t) for t in stamps] == [Decimal(int(v)).scaleb(-9) for v in ns]
    assert stamps[6] == '1700000000.123456789'
    np.testing.assert_array_equal(values[:, 1], x)
    assert str(values[1, 1]) == '-0.0'


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=30),
       st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True))
def test_csv_round_trips_any_stamp_and_double(stamps, value):
    """Property: every int64 stamp comes back as exactly stamp / 1e9 s, every double as itself.

    pyarrow's CSV writer, read back with Python's csv and Decimal.
    """
    import io
    table = pa.table({'stamp_ns': pa.array(stamps, pa.int64()),
                      'x': pa.array([value] * len(stamps), pa.float64())})
    buf = io.BytesIO()
    pa_csv.write_csv(csv_table(table), buf)
    rows = list(csv.reader(io.StringIO(buf.getvalue().decode())))[1:]
    assert [Decimal(r[0]) for r in rows] == [Decimal(v).scaleb(-9) for v in stamps]
    back = [float(r[1]) for r in rows]
    if np.isnan(value):
        assert all(np.isnan(back))
    else:
        assert back == [value] * len(stamps)
        assert all(np.signbit(b) == np.signbit(value) for b in back)


def test_index_of_failed_bags_only():
    """A directory where every bag failed still gets one row per bag, with its error."""
    from wrench_distribution.bag.index import format_index, index_table
    from wrench_distribution.bag.parallel import BagResult
    results = [BagResult('/b/one', '/o/one', error='cannot open: corrupt'),
               BagResult('/b/two', '/o/two', error='no synchronised sample')]
    rows = index_table(results).to_pylist()
    assert [r['bag'] for r in rows] == ['/b/one', '/b/two']
    assert [r['error'] for r in rows] == ['cannot open: corrupt', 'no synchronised sample']
    assert all(r['samples'] is None and r['regimes'] is None for r in rows)
    text = format_index(results)
    assert 'error: cannot open: corrupt' in text and 'error: no synchronised' in text


def check_csv_equals_parquet(out: Path) -> None:
    """``samples.csv`` holds the Parquet table: same columns (the stamp in s), same numbers."""
    names, values, stamps = read_parquet(out)
    header, csv_values, csv_stamps = read_csv(out / 'samples.csv')
    assert header == ['stamp'] + names[1:]
    assert csv_stamps == ['%d.%09d' % divmod(s, 10**9) for s in stamps]
    np.testing.assert_array_equal(csv_values[:, 1:], values[:, 1:])


def reference_rule(n, tol, age, stream, recv, stamp, wrench):
    """Apply the analyzer node's synchronisation rule (README: sync_tolerance, max_age), message by message."""
    fresh, stamps, raw, out = [False] * n, [0] * n, np.zeros((n, 6)), []
    for i, r, s, w in zip(stream, recv, stamp, wrench):
        if not np.isfinite(w).all():
            fresh[i] = False
            continue
        raw[i], stamps[i], fresh[i] = w, s, True
        if not all(fresh):
            continue
        lo, hi = min(stamps), max(stamps)
        if hi - lo > tol:
            fresh[stamps.index(lo)] = False
            continue
        fresh = [False] * n
        if age and r - lo > age:
            continue
        out.append((hi, raw.copy()))
    return out


@pytest.mark.parametrize('seed', range(6))
def test_sync_equals_the_node_rule_on_irregular_streams(seed):
    rng = np.random.default_rng(seed)
    n, k = 3, 3000
    stamps = np.repeat(np.arange(k, dtype=np.int64) * 2_000_000, n)
    stream = np.tile(np.arange(n), k)
    stamps = stamps + rng.integers(0, 400_000, size=stamps.size) * (rng.random(stamps.size) < 0.3)
    recv = stamps + 100_000 + rng.integers(0, 300_000, size=stamps.size)
    order = np.argsort(recv, kind='stable')
    # shuffle a few neighbours, drop some messages, poison some with NaN
    for j in rng.integers(0, order.size - 1, size=40):
        order[j], order[j + 1] = order[j + 1], order[j]
    order = order[rng.random(order.size) > 0.01]
    stream, recv, stamps = stream[order], recv[order], stamps[order]
    wrench = rng.normal(size=(order.size, 6))
    wrench[rng.integers(0, order.size, size=10), 3] = np.nan
    tol, age = 300_000, (600_000 if seed % 2 else 0)
    expected = reference_rule(n, tol, age, stream, recv, stamps, wrench)
    sync = StampSynchronizer(n, tol, age)
    cuts = np.sort(rng.choice(np.arange(1, order.size), size=7, replace=False))
    got_st, got_m = [], []
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, order.size]):
        st, m = sync.push(stream[a:b], recv[a:b], stamps[a:b], wrench[a:b])
        got_st.append(st)
        got_m.append(m)
    st, m = np.concatenate(got_st), np.concatenate(got_m)
    assert st.tolist() == [e[0] for e in expected]
    np.testing.assert_array_equal(m, np.array([e[1] for e in expected]))
    assert len(expected) > k // 2


def test_sqlite_read_equals_rosbags_order(tmp_path):
    """Reading the sqlite3 file directly gives rosbags' messages in rosbags' order.

    Also with equal receive times and messages missing.
    """
    from rosbags.highlevel import AnyReader
    from wrench_distribution.bag.reader import BagReader
    sc = F.make_scenario(50, seed=9)
    bw = F.BagWriter(tmp_path / 'bag', 'sqlite3')
    rng = np.random.default_rng(9)
    for j, ns in enumerate(sc.stamps_ns):
        for i, e in enumerate(F.EFFECTORS):
            if rng.random() < 0.1:
                continue
            recv = int(ns) + (0 if i < 2 else int(rng.integers(0, 3_000_000)))  # ties
            bw.add(f'/{e}/ft_sensor', F.WS, recv,
                   F.wrench_msg(int(ns), f'{e}_ft', sc.readings[j, i]))
    bag = bw.close()
    topics = [f'/{e}/ft_sensor' for e in F.EFFECTORS]

    with BagReader(bag) as reader:
        parts = list(reader.wrench_chunks(topics, 17))
    fast = [np.concatenate([p[j] for p in parts]) for j in range(4)]
    with AnyReader([bag]) as plain:  # rosbags itself: the order to reproduce
        expected = [(topics.index(c.topic), t, raw) for c, t, raw in
                    plain.messages(connections=plain.connections)]
        decoded = [plain.deserialize(raw, F.WS) for _, _, raw in expected]
    assert fast[0].tolist() == [e[0] for e in expected]
    assert fast[2].tolist() == [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec
                                for m in decoded]
    w = [[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x,
          m.wrench.torque.y, m.wrench.torque.z] for m in decoded]
    np.testing.assert_array_equal(fast[3], np.array(w))
    assert fast[1].tolist() == [e[1] for e in expected]
    assert len(fast[0]) > 100


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_every_commanded_element_is_read_back_by_analyze_bag(tmp_path, storage):
    """Offline: F/T readings of commands give back the prescription, sample by sample.

    The commands prescribe every basis element (sensor offsets, signs and tool weights included).
    """
    import dataclasses
    k = 60
    sc = F.make_scenario(k)
    cfg = load_analyzer_config(F.params()['wrench_analyzer']['ros__parameters'])
    dist = LoadDistributor(cfg.contacts, cfg.object_model, cfg.options)
    lam = np.random.default_rng(7).normal(size=(k, dist.internal_dimension)) * 5.0
    resultant = sc.resultant.copy()
    resultant[::3, 3:] = 0.0  # zero resultant torque on every third sample
    applied = dist.synthesize_batch(resultant, lam).wrench_contact
    readings = np.array([[F.to_sensor(applied[j, i], F.ORIENTATIONS[i], i) for i in range(len(F.EFFECTORS))]
                         for j in range(k)])
    sc = dataclasses.replace(sc, resultant=resultant, applied=applied, readings=readings)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, storage)
    params = F.write_params(tmp_path / 'params.yaml')
    assert run_cli(bag, '--config', params, '--out', tmp_path / 'out', '--no-plots') == 0
    table, meta = read_samples(tmp_path / 'out' / 'samples.parquet')
    read = np.column_stack([table.column(f'internal_load.{b}').to_numpy() for b in meta['basis_names']])
    assert meta['basis_names'] == dist.basis_names
    np.testing.assert_allclose(read, lam, atol=1e-9 * np.abs(lam).max() * max(1.0, dist.gain))
