"""Everything a damaged bag still holds, and nothing mixed or dropped in silence.

Bags are written with rosbags, then damaged. What each damaged file still holds is found
without the code under test: for sqlite3, by asking sqlite for every row by its id; for MCAP,
from the message indexes the writer put in the undamaged file (a message survives a cut when
its whole record lies before it). The analysis of what was read is checked against the
scenario's truth (:func:`test_bag_offline.check_against_truth`), and the loss must be stated.
"""
from __future__ import annotations

import json
from pathlib import Path
import shutil
import sqlite3

from mcap.data_stream import ReadDataStream
from mcap.reader import make_reader
from mcap.records import MessageIndex
import numpy as np
import pyarrow.parquet as pq
import pytest
from test_bag_offline import check_against_truth, run_cli

import bag_fixtures as F

K = 150  # samples per bag: 450 F/T messages
TOPICS = [f'/{e}/ft_sensor' for e in F.EFFECTORS]
CUTS = np.linspace(0.08, 0.97, 10)  # of the span that holds the messages


def analyse(tmp_path: Path, bag: Path, *extra) -> tuple[int, dict]:
    """Run analyze-bag into ``tmp_path/out`` (replaced); return the status and summary.json."""
    out = tmp_path / 'out'
    tmp_path.mkdir(parents=True, exist_ok=True)
    code = run_cli(bag, '--config', F.write_params(tmp_path / 'p.yaml'), '--out', out,
                   '--no-plots', '--replace', *extra)
    summary = out / 'summary.json'
    return code, json.loads(summary.read_text()) if summary.exists() else {}


def error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith('error: '), err
    return err[0]


@pytest.fixture(scope='module')
def scenario():
    return F.make_scenario(K, seed=5)


@pytest.fixture(scope='module')
def bags(scenario, tmp_path_factory):
    root = tmp_path_factory.mktemp('undamaged')
    return {s: F.write_scenario_bag(root / s, scenario, s) for s in ('sqlite3', 'mcap')}


def storage_file(bag: Path) -> Path:
    return next(p for p in bag.iterdir() if p.suffix in ('.db3', '.mcap'))


def damaged_copy(bag: Path, where: Path, size: int) -> Path:
    """Copy ``bag`` to ``where`` with its storage file cut to ``size`` bytes."""
    shutil.copytree(bag, where)
    data = storage_file(where)
    data.write_bytes(data.read_bytes()[:size])
    return where


def sample_rows(intact: dict) -> np.ndarray:
    """Return the samples whose three messages survive: ``intact[(sample, effector)]``."""
    return np.array([j for j in range(K) if all(intact[(j, i)] for i in range(3))], int)


def check_loss_stated(summary: dict, read: dict) -> None:
    """Check that the loss per topic is what the bag announces minus what was read, and said."""
    done = summary['completeness']
    assert not done['complete'] and not summary['complete']
    for topic, count in read.items():
        entry = done['topics'][topic]
        assert entry['announced'] == K and entry['read'] == count, (topic, entry, count)
        assert entry['missing'] == K - count
    assert summary['dropped']['unreadable_messages'] == done['missing_messages'] == \
        sum(K - c for c in read.values())
    assert any('truncated' in p or 'damaged' in p for p in done['problems']), done['problems']


# -- sqlite3 ------------------------------------------------------------------------------------
#: pages of rosbag2's schema (sqlite_schema, the tables and the index's roots): a file cut
#: inside them cannot name its topics, and is refused whole ("cannot open")
SCHEMA_PAGES = 7


def sqlite_rows(path: Path) -> dict:
    """Row id -> (topic, payload) of an undamaged rosbag2 sqlite3 file."""
    with sqlite3.connect(path) as db:
        topics = dict(db.execute('SELECT id, name FROM topics'))
        return {i: (topics[t], bytes(d)) for i, t, d in
                db.execute('SELECT id, topic_id, data FROM messages')}


def sqlite_survivors(path: Path, rows: dict) -> dict:
    """Row id -> payload of every row sqlite can still give, asked one by one by its id."""
    db = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    db.execute('PRAGMA writable_schema=ON')  # sqlite refuses a file shorter than its header says
    out = {}
    for row in rows:
        try:
            found = db.execute('SELECT data FROM messages WHERE id = ?', (row,)).fetchone()
        except sqlite3.DatabaseError:
            continue
        if found is not None:
            out[row] = bytes(found[0])
    db.close()
    return out


@pytest.mark.parametrize('cut', CUTS)
def test_truncated_sqlite_gives_every_row_sqlite_can_still_read(bags, scenario, tmp_path,
                                                                capsys, cut):
    bag = bags['sqlite3']
    rows = sqlite_rows(storage_file(bag))
    size = storage_file(bag).stat().st_size
    schema = SCHEMA_PAGES * int.from_bytes(storage_file(bag).read_bytes()[16:18], 'big')
    damaged = damaged_copy(bag, tmp_path / 'bag', int(schema + (size - schema) * cut))
    survivors = sqlite_survivors(storage_file(damaged), rows)
    # rosbags wrote the rows in receive order: sample j, effector i is row 3 j + i + 1
    intact = {(j, i): rows[3 * j + i + 1][1] == survivors.get(3 * j + i + 1)
              for j in range(K) for i in range(3)}
    read = {t: sum(1 for r in survivors if rows[r][0] == t) for t in TOPICS}
    if all(intact.values()):  # the cut took only index pages: every message read
        code, summary = analyse(tmp_path, damaged)
        assert code == 0 and summary['complete'], capsys.readouterr().err
        check_against_truth(tmp_path / 'out', scenario)
        return
    code, summary = analyse(tmp_path, damaged)
    assert code == 2 and not summary and not (tmp_path / 'out').exists()
    assert 'incomplete' in error_line(capsys)
    code, summary = analyse(tmp_path, damaged, '--allow-incomplete')
    assert code == 0, capsys.readouterr().err
    check_loss_stated(summary, read)
    # a row sqlite gives back damaged (a page cut in two reads as zeros) is corrupt, and said
    corrupt = sum(1 for r, data in survivors.items() if data != rows[r][1])
    assert summary['dropped']['corrupt_messages'] == corrupt
    check_against_truth(tmp_path / 'out', scenario, sample_rows(intact))


def test_sqlite_page_damaged_inside_the_file_is_read_past(bags, scenario, tmp_path, capsys):
    """A leaf page of the messages zeroed in the middle of the file: every other row is read.

    The receive-time query stops at the page; the rest is read in storage order, nothing
    given twice, nothing readable left out.
    """
    bag = bags['sqlite3']
    rows = sqlite_rows(storage_file(bag))
    damaged = tmp_path / 'bag'
    shutil.copytree(bag, damaged)
    data = bytearray(storage_file(damaged).read_bytes())
    size = int.from_bytes(data[16:18], 'big')
    leaves = [n for n in range(SCHEMA_PAGES, len(data) // size) if data[n * size] == 0x0D]
    page = leaves[len(leaves) // 2]  # a table leaf page (sqlite file format): of the messages
    data[page * size:(page + 1) * size] = bytes(size)
    storage_file(damaged).write_bytes(bytes(data))
    survivors = sqlite_survivors(storage_file(damaged), rows)
    assert 0 < len(survivors) < len(rows)
    assert all(data == rows[r][1] for r, data in survivors.items())
    intact = {(j, i): (3 * j + i + 1) in survivors for j in range(K) for i in range(3)}
    read = {t: sum(1 for r in survivors if rows[r][0] == t) for t in TOPICS}
    code, summary = analyse(tmp_path, damaged)
    assert code == 2 and 'damaged pages' in error_line(capsys)
    code, summary = analyse(tmp_path, damaged, '--allow-incomplete')
    assert code == 0
    check_loss_stated(summary, read)
    assert summary['dropped']['corrupt_messages'] == 0
    check_against_truth(tmp_path / 'out', scenario, sample_rows(intact))


# -- MCAP ---------------------------------------------------------------------------------------
def mcap_records(path: Path) -> list:
    """``(topic, record start, record end)`` of every message, from the file's own indexes.

    rosbags writes uncompressed chunks: a message record's place in the file is its chunk's
    records start (MCAP specification: opcode, length, three u64, u32 CRC, compression string,
    u64 records length) plus the offset its message index gives.
    """
    out = []
    with open(path, 'rb') as f:
        summary = make_reader(f).get_summary()
        for chunk in summary.chunk_indexes:
            assert chunk.compression == ''
            records = chunk.chunk_start_offset + 9 + 8 + 8 + 8 + 4 + 4 + len(chunk.compression) + 8
            for channel, offset in chunk.message_index_offsets.items():
                f.seek(offset + 9)
                index = MessageIndex.read(ReadDataStream(f))
                for _, at in index.records:
                    f.seek(records + at + 1)
                    length = int.from_bytes(f.read(8), 'little')
                    out.append((summary.channels[channel].topic, records + at,
                                records + at + 9 + length))
    return sorted(out, key=lambda r: r[1])


@pytest.mark.parametrize('cut', CUTS)
def test_truncated_mcap_gives_every_message_before_the_cut(bags, scenario, tmp_path, capsys,
                                                           cut):
    bag = bags['mcap']
    records = mcap_records(storage_file(bag))
    first, last = records[0][2], records[-1][2]
    at = int(first + (last - first) * cut)
    damaged = damaged_copy(bag, tmp_path / 'bag', at)
    # messages in receive order: sample j, effector i is the (3 j + i)-th record
    intact = {(j, i): records[3 * j + i][2] <= at for j in range(K) for i in range(3)}
    read = {t: sum(1 for topic, _, end in records if topic == t and end <= at) for t in TOPICS}
    code, summary = analyse(tmp_path, damaged)
    assert code == 2 and not summary and not (tmp_path / 'out').exists()
    line = error_line(capsys)
    assert 'truncated' in line and f'file size {at} bytes' in line, line
    code, summary = analyse(tmp_path, damaged, '--allow-incomplete')
    assert code == 0, capsys.readouterr().err
    check_loss_stated(summary, read)
    assert summary['dropped']['corrupt_messages'] == 0
    check_against_truth(tmp_path / 'out', scenario, sample_rows(intact))


def test_mcap_cut_after_its_messages_loses_nothing(bags, scenario, tmp_path):
    """A cut in the summary section (indexes, statistics) takes no message: complete."""
    bag = bags['mcap']
    end = mcap_records(storage_file(bag))[-1][2]
    size = storage_file(bag).stat().st_size
    damaged = damaged_copy(bag, tmp_path / 'bag', (end + size) // 2)
    code, summary = analyse(tmp_path, damaged)
    assert code == 0 and summary['complete'] and summary['completeness']['complete']
    assert any('truncated' in n for n in summary['completeness']['notes'])
    check_against_truth(tmp_path / 'out', scenario)


# -- one corrupt message ------------------------------------------------------------------------
def corrupt_one(bag: Path, storage: str, row: int) -> None:
    """Swap the bytes of the CDR representation identifier of the ``row``-th message.

    ``row`` counts from 0 in receive order; little-endian ``00 01`` becomes ``01 00``, which no
    CDR reader takes.
    """
    data = storage_file(bag)
    if storage == 'sqlite3':
        with sqlite3.connect(data) as db:
            payload = bytearray(db.execute('SELECT data FROM messages WHERE id = ?',
                                           (row + 1,)).fetchone()[0])
            payload[0:2] = payload[1::-1]
            db.execute('UPDATE messages SET data = ? WHERE id = ?', (bytes(payload), row + 1))
        return
    start = mcap_records(data)[row][1] + 9 + 2 + 4 + 8 + 8  # the payload, after the header
    raw = bytearray(data.read_bytes())
    raw[start:start + 2] = raw[start + 1:start - 1:-1]
    data.write_bytes(bytes(raw))


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_one_corrupt_message_is_skipped_and_counted(bags, scenario, tmp_path, capsys, storage):
    bag = tmp_path / 'bag'
    shutil.copytree(bags[storage], bag)
    sample, effector = 40, 1
    corrupt_one(bag, storage, 3 * sample + effector)
    code, summary = analyse(tmp_path, bag)
    assert code == 2 and not (tmp_path / 'out').exists()
    line = error_line(capsys)
    assert '/right/ft_sensor: 1 messages do not decode' in line, line
    code, summary = analyse(tmp_path, bag, '--allow-incomplete')
    assert code == 0
    assert summary['dropped']['corrupt_messages'] == 1
    assert summary['dropped']['per_effector']['right']['corrupt'] == 1
    assert summary['completeness']['topics']['/right/ft_sensor']['read'] == K  # read, not decoded
    assert summary['dropped']['unreadable_messages'] == 0 and not summary['complete']
    # the other two readings of that sample have no partner: unsynchronised, as the node does
    assert summary['dropped']['unsynchronised_messages'] == 2
    check_against_truth(tmp_path / 'out', scenario, [j for j in range(K) if j != sample])


# -- several publishers -------------------------------------------------------------------------
def rogue_bag(path: Path, sc: F.Scenario, storage: str, rogue: bool, **writer) -> Path:
    """Write the scenario's bag, with ``rogue`` and a second publisher on the left F/T topic.

    The second node publishes 1000 N every fifth sample (same stamps, received just after the
    sensor's).
    """
    bw = F.BagWriter(path, storage, **writer)
    for j, ns in enumerate(sc.stamps_ns):
        for i, e in enumerate(F.EFFECTORS):
            bw.add(f'/{e}/ft_sensor', F.WS, int(ns) + 300_000 * (i + 1),
                   F.wrench_msg(int(ns), f'{e}_ft', sc.readings[j, i]))
        if rogue and j % 5 == 2:
            bw.add('/left/ft_sensor', F.WS, int(ns) + 400_000,
                   F.wrench_msg(int(ns), 'left_ft', [1000.0, 0, 0, 0, 0, 0]), publisher=1)
    return bw.close()


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_second_publisher_reported_and_the_first_analysed_alone(scenario, tmp_path, capsys,
                                                                storage):
    alone = rogue_bag(tmp_path / 'alone', scenario, storage, rogue=False)
    mixed = rogue_bag(tmp_path / 'mixed', scenario, storage, rogue=True)
    rogue = len(range(2, K, 5))
    code, _ = analyse(tmp_path / 'a', alone)
    assert code == 0
    code, summary = analyse(tmp_path / 'm', mixed)
    assert code == 2 and not (tmp_path / 'm' / 'out').exists()
    line = error_line(capsys)
    assert '/left/ft_sensor has 2 publishers' in line and 'only the first is analysed' in line
    code, summary = analyse(tmp_path / 'm', mixed, '--allow-incomplete')
    assert code == 0
    assert summary['dropped']['other_publisher_messages'] == rogue
    assert summary['dropped']['per_effector']['left']['other_publisher'] == rogue
    assert summary['publishers']['/left/ft_sensor']['other_publisher_messages'] == rogue
    assert not summary['complete'] and summary['dropped']['unreadable_messages'] == 0
    # the analysis of the first publisher's data is the analysis of the bag without the second
    first = pq.read_table(tmp_path / 'm' / 'out' / 'samples.parquet')
    only = pq.read_table(tmp_path / 'a' / 'out' / 'samples.parquet')
    assert first.column_names == only.column_names and first.num_rows == only.num_rows == K
    for name in only.column_names:
        np.testing.assert_array_equal(first.column(name).to_numpy(), only.column(name).to_numpy())
    check_against_truth(tmp_path / 'm' / 'out', scenario)


def test_one_connection_of_several_publishers_is_reported(scenario, tmp_path, capsys):
    """Refuse, or analyse together and say, two publishers recorded as one connection.

    rosbag2 records a topic that had two publishers when it subscribed as one connection with
    two QoS profiles: the messages cannot be told apart.
    """
    bag = rogue_bag(tmp_path / 'bag', scenario, 'sqlite3', rogue=False,
                    shared_qos={'/left/ft_sensor': [F.qos(10), F.qos(1)]})
    code, _ = analyse(tmp_path, bag)
    assert code == 2 and 'had 2 publishers when it was recorded' in error_line(capsys)
    code, summary = analyse(tmp_path, bag, '--allow-incomplete')
    assert code == 0 and not summary['complete']
    assert summary['publishers']['/left/ft_sensor']['qos_profiles'] == 2


# -- every drop under its cause -----------------------------------------------------------------
def test_backwards_stamps_are_counted_and_the_analysis_not_complete(tmp_path):
    sc = F.make_scenario(60)
    late = {20, 35}  # these samples' three readings are stamped 10 periods back
    bw = F.BagWriter(tmp_path / 'bag', 'mcap')
    for j, ns in enumerate(sc.stamps_ns):
        stamp = int(ns) - (10 * F.PERIOD_NS if j in late else 0)
        for i, e in enumerate(F.EFFECTORS):
            bw.add(f'/{e}/ft_sensor', F.WS, int(ns) + 300_000 * (i + 1),
                   F.wrench_msg(stamp, f'{e}_ft', sc.readings[j, i]))
    code, summary = analyse(tmp_path, bw.close())
    assert code == 0  # read whole: the analysis' drops are reported, not refused
    assert summary['stamps_going_backwards'] == 3 * len(late)  # one per topic and late sample
    for e in F.EFFECTORS:
        assert summary['dropped']['per_effector'][e]['stamps_going_backwards'] == len(late)
    assert summary['dropped']['out_of_order_samples'] == len(late)
    assert summary['samples'] == 60 - len(late)
    assert summary['completeness']['complete'] and not summary['complete']
    assert any('out of order' in r for r in summary['incomplete_because'])


def test_only_the_synchronisation_drops_in_a_complete_analysis(tmp_path):
    """Call complete a bag whose only drops are the synchronisation's, not one with a NaN.

    A reading lost before recording leaves its partners unsynchronised: still complete.
    """
    sc = F.make_scenario(40)
    bag = F.write_scenario_bag(tmp_path / 'a' / 'bag', sc, drop=[(7, 0)])
    code, summary = analyse(tmp_path / 'a', bag)
    assert code == 0 and summary['complete'] and summary['incomplete_because'] == []
    assert summary['dropped']['unsynchronised_messages'] == 2
    sc.readings[9, 2, 3] = np.nan
    code, summary = analyse(tmp_path / 'b', F.write_scenario_bag(tmp_path / 'b' / 'bag', sc))
    assert code == 0 and not summary['complete']
    assert summary['dropped']['rejected_nan_messages'] == 1
    assert summary['incomplete_because'] == ['1 messages with NaN or Inf']
