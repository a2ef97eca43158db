"""Every valid recording analysed, every broken one refused, nothing lost in silence.

Each bag is written by the tool that writes it in the field (:mod:`rosbag2_writers`: the
``mcap`` writer with rosbag2's layout, sqlite3 in WAL mode killed mid-run; rosbags'
writer in :mod:`bag_fixtures`), from a scenario whose answer is known independently
(:func:`test_bag_offline.check_against_truth` checks every sample).
"""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pyarrow.parquet as pq
import pytest
import rosbag2_writers as W
from test_bag_offline import check_against_truth, read_parquet, run_cli

import bag_fixtures as F

TWIST = 'geometry_msgs/msg/TwistStamped'
POSE = 'geometry_msgs/msg/PoseStamped'


def twist_raw(ns: int, values) -> bytes:
    """Return a TwistStamped payload (as long as a WrenchStamped one: the dangerous case)."""
    T = F.T
    V = T['geometry_msgs/msg/Vector3']
    msg = T[TWIST](header=F._header(ns, 'base'), twist=T['geometry_msgs/msg/Twist'](
        linear=V(x=values[0], y=values[1], z=values[2]),
        angular=V(x=values[3], y=values[4], z=values[5])))
    return bytes(F.TYPESTORE.serialize_cdr(msg, TWIST))


def analyse(tmp_path: Path, bag: Path, *extra) -> tuple[int, dict]:
    out = tmp_path / 'out'
    code = run_cli(bag, '--config', F.write_params(tmp_path / 'p.yaml'), '--out', out,
                   '--no-plots', *extra)
    summary = out / 'summary.json'
    return code, json.loads(summary.read_text()) if summary.exists() else {}


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: ') and 'Traceback' not in err[0], err
    return err[0]


def test_topic_with_two_types_reads_only_the_expected_one(tmp_path):
    sc = F.make_scenario(80)
    messages = W.ft_messages(sc)
    # the TwistStamped, same stamp, arrives after the wrench: read as a wrench, it would win
    messages += [('/right/ft_sensor', TWIST, int(ns) + 700_000, twist_raw(int(ns), [100.0] * 6))
                 for ns in sc.stamps_ns]
    messages.sort(key=lambda m: m[2])
    W.mcap_bag(tmp_path / 'bag', [messages])
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    done = summary['completeness']
    assert done['complete'] and done['topics']['/right/ft_sensor']['read'] == 80
    assert any(TWIST in n and 'only its geometry_msgs/msg/WrenchStamped' in n
               for n in done['notes'])


def test_topic_with_two_other_types_is_an_error_naming_both(tmp_path, capsys):
    sc = F.make_scenario(10)
    messages = [m for m in W.ft_messages(sc) if m[0] != '/right/ft_sensor']
    for ns in sc.stamps_ns:
        messages.append(('/right/ft_sensor', TWIST, int(ns), twist_raw(int(ns), [1.0] * 6)))
        pose = F.T[POSE](header=F._header(int(ns), 'x'), pose=F._pose([0, 0, 0, 0, 0, 0, 1]))
        messages.append(('/right/ft_sensor', POSE, int(ns) + 1,
                         bytes(F.TYPESTORE.serialize_cdr(pose, POSE))))
    messages.sort(key=lambda m: m[2])
    W.mcap_bag(tmp_path / 'bag', [messages])
    code, _ = analyse(tmp_path, tmp_path / 'bag')
    line = error_line(capsys)
    assert code == 2 and TWIST in line and POSE in line and 'WrenchStamped' in line
    assert 'sync_tolerance' not in line


def test_topic_not_in_cdr_names_its_encoding(tmp_path, capsys):
    from mcap.writer import Writer
    sc = F.make_scenario(5)
    messages = [m for m in W.ft_messages(sc) if m[0] != '/right/ft_sensor']
    W.mcap_bag(tmp_path / 'bag', [messages])
    data = next((tmp_path / 'bag').glob('*.mcap'))
    with open(data, 'wb') as f:  # rewritten with /right/ft_sensor in JSON
        writer = Writer(f)
        writer.start(profile='ros2', library='test')
        schema = writer.register_schema(F.WS, 'ros2msg', W.msgdef(F.WS))
        ids = {t: writer.register_channel(t, 'cdr', schema) for t in
               ('/left/ft_sensor', '/palm/ft_sensor')}
        ids['/right/ft_sensor'] = writer.register_channel('/right/ft_sensor', 'json', schema)
        for topic, _, recv, raw in messages:
            writer.add_message(ids[topic], log_time=recv, data=raw, publish_time=recv)
            writer.add_message(ids['/right/ft_sensor'], log_time=recv, data=b'{}',
                               publish_time=recv)
        writer.finish()
    code, _ = analyse(tmp_path, tmp_path / 'bag')
    line = error_line(capsys)
    assert code == 2 and '/right/ft_sensor' in line and 'json' in line and 'CDR' in line


def test_split_bag_with_different_qos_text_in_each_file(tmp_path):
    sc = F.make_scenario(200)
    messages = W.ft_messages(sc)
    half = len(messages) // 2 + 1  # the split falls inside a sample
    W.mcap_bag(tmp_path / 'bag', [messages[:half], messages[half:]],
               file_qos=[W.QOS_A, W.QOS_B], metadata_qos=W.QOS_B.replace('10', '7'))
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']
    assert all(t['read'] == 200 for t in summary['completeness']['topics'].values())


def test_metadata_qos_differs_from_the_sqlite_file(tmp_path):
    """Read every message when metadata.yaml's QoS text differs from the storage file's.

    rosbags' own writer, then the QoS text of metadata.yaml rewritten (as in rosbag2's
    test bags).
    """
    sc = F.make_scenario(60)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3')
    meta = (bag / 'metadata.yaml').read_text()
    (bag / 'metadata.yaml').write_text(_other_qos(meta))
    assert W.QOS_B.split('\n')[0] in (bag / 'metadata.yaml').read_text()
    code, summary = analyse(tmp_path, bag)
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)


def test_metadata_qos_differs_from_the_mcap_file(tmp_path):
    """Read every message; rosbags reads none of such a bag (as of rosbag2's own test bags)."""
    sc = F.make_scenario(60)
    W.mcap_bag(tmp_path / 'bag', [W.ft_messages(sc)], file_qos=[W.QOS_A], metadata_qos=W.QOS_B)
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']


def _other_qos(meta: str) -> str:
    import yaml
    doc = yaml.safe_load(meta)
    for entry in doc['rosbag2_bagfile_information']['topics_with_message_count']:
        entry['topic_metadata']['offered_qos_profiles'] = W.QOS_B
    return yaml.safe_dump(doc)


def test_sqlite_wal_of_a_killed_recorder_is_read(tmp_path):
    sc = F.make_scenario(150)
    messages = W.ft_messages(sc)
    W.killed_sqlite_bag(tmp_path / 'bag', messages, checkpointed=len(messages) // 3)
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']


def test_unchunked_mcap_with_out_of_order_log_times(tmp_path):
    """The fast-write preset: no chunks, no message index, log times in arrival order."""
    sc = F.make_scenario(120)
    messages = W.ft_messages(sc)
    rng = np.random.default_rng(3)
    for start in range(0, len(messages), 7):  # callbacks deliver out of order
        window = messages[start:start + 7]
        rng.shuffle(window)
        messages[start:start + 7] = window
    assert any(a[2] > b[2] for a, b in zip(messages, messages[1:]))
    W.mcap_bag(tmp_path / 'bag', [messages], chunked=False)
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']


@pytest.mark.parametrize('compression', ['NONE', 'LZ4', 'ZSTD'])
def test_chunked_mcap_without_message_indexes(tmp_path, compression):
    """Chunks but no message index records (chunk index only), any chunk compression."""
    from mcap.writer import CompressionType, IndexType
    sc = F.make_scenario(100)
    W.mcap_bag(tmp_path / 'bag', [W.ft_messages(sc)], chunk_size=1500,
               index_types=IndexType.CHUNK, compression=CompressionType[compression])
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
@pytest.mark.parametrize('mode', ['MESSAGE', 'FILE'])
def test_compressed_bags_of_rosbags_writer(tmp_path, storage, mode):
    """Read the bags of rosbags' writer with zstd compression per message or per file."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.rosbag2.enums import CompressionFormat, CompressionMode
    sc = F.make_scenario(60)
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    writer = Writer(tmp_path / 'bag', version=8, storage_plugin=plugin)
    writer.set_compression(CompressionMode[mode], CompressionFormat.ZSTD)
    with writer as w:
        conns = {}
        for topic, msgtype, recv, raw in W.ft_messages(sc):
            if topic not in conns:
                conns[topic] = w.add_connection(topic, msgtype, typestore=F.TYPESTORE)
            w.write(conns[topic], recv, raw)
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert summary['completeness']['complete']


def test_extra_topics_with_unknown_or_empty_schemas_are_ignored(tmp_path):
    sc = F.make_scenario(90)
    messages = W.ft_messages(sc)
    for j, ns in enumerate(sc.stamps_ns[::3]):
        messages.append(('/fibonacci/_action/feedback',
                         'example_interfaces/action/Fibonacci_FeedbackMessage', int(ns),
                         b'\x00\x01\x00\x00' + bytes(range(j % 50))))
        messages.append(('/gripper/state', 'missing_pkg/msg/State', int(ns) + 5, b'garbage'))
    messages.sort(key=lambda m: m[2])
    W.mcap_bag(tmp_path / 'bag', [messages], schemas={
        'example_interfaces/action/Fibonacci_FeedbackMessage': ('unknown', b''),
        'missing_pkg/msg/State': ('ros2msg', b'')})
    code, summary = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)
    assert set(summary['completeness']['topics']) == {f'/{e}/ft_sensor' for e in F.EFFECTORS}


def zero_length_frame_raw(ns: int, w) -> bytes:
    """Return WrenchStamped CDR with a ``frame_id`` of length 0 (no NUL), laid out by hand."""
    head = b'\x00\x01\x00\x00' + int(ns // 10**9).to_bytes(4, 'little', signed=True)
    head += int(ns % 10**9).to_bytes(4, 'little') + (0).to_bytes(4, 'little')
    head += b'\x00' * 4  # doubles align to 8 from the end of the encapsulation header
    return head + np.asarray(w, '<f8').tobytes()


def test_zero_length_frame_id(tmp_path):
    sc = F.make_scenario(50)
    messages = W.ft_messages(sc)
    for n, (topic, msgtype, recv, _) in enumerate(messages):
        if topic == '/right/ft_sensor':
            j = int(np.searchsorted(sc.stamps_ns, recv - 600_000))
            messages[n] = (topic, msgtype, recv, zero_length_frame_raw(sc.stamps_ns[j],
                                                                       sc.readings[j, 1]))
    W.mcap_bag(tmp_path / 'bag', [sorted(messages, key=lambda m: m[2])])
    code, _ = analyse(tmp_path, tmp_path / 'bag')
    assert code == 0
    check_against_truth(tmp_path / 'out', sc)


def _check_partial(tmp_path: Path, sc: F.Scenario, summary: dict) -> None:
    """Check that an incomplete bag's outputs are right and what is missing is counted."""
    done = summary['completeness']
    assert not done['complete']
    for topic in done['topics'].values():
        assert topic['announced'] == len(sc.stamps_ns)
        assert topic['read'] + topic['missing'] == topic['announced']
    assert done['missing_messages'] == sum(t['missing'] for t in done['topics'].values())
    _, _, stamps = read_parquet(tmp_path / 'out')
    rows = np.searchsorted(sc.stamps_ns, stamps)
    check_against_truth(tmp_path / 'out', sc, rows)
    assert summary['samples'] == len(rows) <= min(t['read'] for t in done['topics'].values())


@pytest.fixture(scope='module')
def chunked_bag(tmp_path_factory):
    """Return a chunked, zstd-compressed, CRC-checked MCAP bag of 300 samples (many chunks)."""
    sc = F.make_scenario(300)
    root = tmp_path_factory.mktemp('chunked')
    W.mcap_bag(root / 'bag', [W.ft_messages(sc)], chunk_size=2048)
    return sc, root / 'bag'


def _damaged_copy(tmp_path: Path, bag: Path, fraction: float, truncate: bool) -> Path:
    import shutil
    copy = tmp_path / 'bag'
    shutil.copytree(bag, copy)
    data = next(copy.glob('*.mcap'))
    raw = bytearray(data.read_bytes())
    at = int(len(raw) * fraction)
    if truncate:
        del raw[at:]
    else:
        raw[at:at + 40] = bytes((b * 37 + 11) & 0xFF for b in range(40))
    data.write_bytes(bytes(raw))
    return copy


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fraction=st.floats(0.02, 0.9), truncate=st.booleans())
def test_damage_at_any_offset_is_refused_or_counted(tmp_path_factory, chunked_bag, fraction,
                                                    truncate):
    """Refuse or count garbage or truncation anywhere; never exit 0 with less.

    With --allow-incomplete: correct samples for what was read, the shortfall counted.
    """
    sc, bag = chunked_bag
    tmp_path = tmp_path_factory.mktemp('damaged')
    damaged = _damaged_copy(tmp_path, bag, fraction, truncate)
    code, summary = analyse(tmp_path, damaged)
    if code == 0:  # only when every message was read and is right
        assert summary['completeness']['complete'] and summary['complete']
        check_against_truth(tmp_path / 'out', sc)
        return
    assert not (tmp_path / 'out').exists()  # refused: nothing written, nothing looks whole
    code, summary = analyse(tmp_path, damaged, '--allow-incomplete')
    if code == 0:
        _check_partial(tmp_path, sc, summary)


@pytest.mark.parametrize('fraction', [0.3, 0.5, 0.7])
def test_garbage_mid_data_is_reported_with_where(tmp_path, capsys, chunked_bag, fraction):
    sc, bag = chunked_bag
    damaged = _damaged_copy(tmp_path, bag, fraction, truncate=False)
    code, summary = analyse(tmp_path, damaged)
    line = error_line(capsys)
    assert code == 2 and 'incomplete' in line and 'chunk at byte' in line, line
    assert 'allow-incomplete' in line and 'sync_tolerance' not in line
    assert not summary and not (tmp_path / 'out').exists()  # refused: nothing written
    code, summary = analyse(tmp_path, damaged, '--allow-incomplete')
    assert code == 0
    _check_partial(tmp_path, sc, summary)


@pytest.mark.parametrize('keep', [0.25, 0.5, 0.75])
def test_truncated_sqlite_is_refused_or_counted(tmp_path, capsys, keep):
    sc = F.make_scenario(400)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'sqlite3')
    data = next(bag.glob('*.db3'))
    data.write_bytes(data.read_bytes()[:int(data.stat().st_size * keep)])
    code, summary = analyse(tmp_path, bag)
    assert code == 2 and not summary
    line = error_line(capsys)
    assert 'corrupt or truncated' in line or 'incomplete' in line, line
    code, summary = analyse(tmp_path, bag, '--allow-incomplete')
    assert code == 0, capsys.readouterr().err
    _check_partial(tmp_path, sc, summary)


def test_directory_with_a_damaged_bag(tmp_path, capsys, chunked_bag):
    sc, bag = chunked_bag
    import shutil
    shutil.copytree(bag, tmp_path / 'bags' / 'good')
    shutil.copytree(_damaged_copy(tmp_path / 'd', bag, 0.5, truncate=False),
                    tmp_path / 'bags' / 'bad')
    cfg = F.write_params(tmp_path / 'p.yaml')
    for allow in ((), ('--allow-incomplete',)):
        out = tmp_path / ('o' + ''.join(allow))
        code = run_cli(tmp_path / 'bags', '--config', cfg, '--out', out, '--jobs', '1',
                       '--no-plots', *allow)
        index = {r['bag']: r for r in pq.read_table(out / 'index.parquet').to_pylist()}
        bad = index[str(tmp_path / 'bags' / 'bad')]
        good = index[str(tmp_path / 'bags' / 'good')]
        assert good['complete'] and good['missing_messages'] == 0 and good['samples'] == 300
        assert bad['complete'] is False and bad['missing_messages'] > 0 and bad['problems']
        assert bad['samples'] < 300
        if allow:
            summary = json.loads((out / 'bad' / 'summary.json').read_text())
            assert summary['completeness']['missing_messages'] == bad['missing_messages']
            assert code == 0 and bad['error'] is None and bad['status'] == 'done'
        else:  # refused: its row says what was read, nothing of it is written
            assert not (out / 'bad').exists() and bad['status'] == 'failed'
            assert code == 2 and 'incomplete' in bad['error']
            assert '1 of 2 bags failed' in error_line(capsys)


@pytest.mark.parametrize('output_frame', ['contact', 'object'])
def test_friction_offline_per_contact(tmp_path, output_frame):
    """Check friction.parquet's utilisation, normal force and status per contact and sample.

    As the analyzer node's ``measured/friction`` (utilisation -1 where undefined), derived
    by hand from the scenario's applied wrenches.
    """
    sc = F.make_scenario(120, moving=True)
    bag = F.write_scenario_bag(tmp_path / 'bag', sc, 'mcap', poses='topic', pose_period=1)
    mu = np.array([0.5, 0.3, 0.8])
    normals = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.6, 0.0, 0.8]])
    cfg = F.write_params(tmp_path / 'p.yaml', 'topic', friction_coefficients=mu.tolist(),
                         contact_normals=normals.ravel().tolist(), friction_margin=0.1,
                         output_frame=output_frame)
    assert run_cli(bag, '--config', cfg, '--out', tmp_path / 'out', '--no-plots') == 0
    table = pq.read_table(tmp_path / 'out' / 'friction.parquet')
    assert table.column('stamp_ns').to_pylist() == sc.stamps_ns.tolist()
    statuses = table.schema.metadata[b'statuses'].decode().split(',')
    seen = set()
    for i, e in enumerate(F.EFFECTORS):
        f = sc.applied[:, i, :3]
        normal = f @ normals[i]
        tangential = np.linalg.norm(f - normal[:, None] * normals[i], axis=1)
        util = tangential / (mu[i] * normal)
        got = {k: table.column(f'{e}.friction.{k}').to_numpy()
               for k in ('utilisation', 'normal_force', 'status')}
        np.testing.assert_allclose(got['normal_force'], normal, atol=1e-8)
        pushing = normal > 1e-6
        np.testing.assert_allclose(got['utilisation'][pushing], util[pushing], rtol=1e-8)
        assert np.all(got['utilisation'][~pushing] == -1.0)
        names = [statuses[int(c)] for c in got['status']]
        clear = pushing & (np.abs(util - 0.9) > 1e-6) & (np.abs(util - 1.0) > 1e-6)
        expected = np.where(util < 0.9, 'ok', np.where(util < 1.0, 'near_limit', 'slipping'))
        assert [n for n, c in zip(names, clear) if c] == list(expected[clear])
        assert all(n == 'pulling' for n, p in zip(names, normal < -1e-6) if p)
        seen.update(names)
    assert len(seen) >= 2  # the scenario crosses statuses
    summary = json.loads((tmp_path / 'out' / 'summary.json').read_text())
    assert 'friction.parquet' in summary['outputs']
    left = summary['friction']['contacts']['left']
    assert sum(left['status_samples'].values()) == 120


@settings(max_examples=30, deadline=None)
@given(frame=st.text(st.characters(min_codepoint=97, max_codepoint=122), max_size=11),
       counts=st.lists(st.integers(0, 4), min_size=1, max_size=6),
       same=st.booleans())
def test_pose_array_decoding_equals_rosbags(frame, counts, same):
    """The numpy PoseArray decoder gives rosbags' deserialisation for any frame and size."""
    from wrench_distribution.bag.cdr import decode_pose_arrays
    rng = np.random.default_rng(len(frame) + 7 * len(counts))
    counts = [counts[0]] * len(counts) if same else counts
    messages = [F.pose_array_msg(F.START_NS + 12_345 * j, frame, rng.normal(size=(c, 7)))
                for j, c in enumerate(counts)]
    raws = [bytes(F.TYPESTORE.serialize_cdr(m, F.PA)) for m in messages]
    sizes = np.array([len(r) for r in raws])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])

    def never(raw):
        raise AssertionError('plain little-endian CDR must not need the fallback')
    decoded = decode_pose_arrays(np.frombuffer(b''.join(raws), np.uint8), starts, sizes,
                                 lambda raw: _by_rosbags(raw) if not same else never(raw))
    for (stamp, frame_id, poses), msg in zip(decoded, messages):
        assert stamp == msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
        assert frame_id == frame
        expected = [[p.position.x, p.position.y, p.position.z, p.orientation.x,
                     p.orientation.y, p.orientation.z, p.orientation.w] for p in msg.poses]
        assert poses.tolist() == expected


def _by_rosbags(raw: bytes):
    msg = F.TYPESTORE.deserialize_cdr(raw, F.PA)
    return (msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec, msg.header.frame_id,
            [[p.position.x, p.position.y, p.position.z, p.orientation.x, p.orientation.y,
              p.orientation.z, p.orientation.w] for p in msg.poses])
