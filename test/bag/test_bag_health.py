"""Sensor health over bags written with rosbags (sqlite3 and mcap), readings from physics."""
import numpy as np
import pytest

import bag_fixtures as B
import health_fixtures as H
from wrench_distribution.bag.errors import BagError
from wrench_distribution.bag.health import bag_health
from wrench_distribution.core.health import FROZEN_REPEATS, SPIKE_WIDTH


def write_bag(path, rec, storage):
    """Write the recording as two ``WrenchStamped`` topics, received 0.3 and 0.6 ms after their stamps."""
    writer = B.BagWriter(path, storage)
    for j, stamp in enumerate(rec.stamps_ns.tolist()):
        for i, name in enumerate(H.NAMES):
            writer.add(f'/{name}/ft_sensor', B.WS, stamp + 300_000 * (i + 1),
                       B.wrench_msg(stamp, f'{name}_ft', rec.readings[j, i]))
    return writer.close()


@pytest.mark.parametrize('storage', ['sqlite3', 'mcap'])
def test_a_clean_bag_raises_nothing(tmp_path, storage):
    rec = H.at_rest(30, 500.0, seed=21)
    bag = write_bag(tmp_path / 'clean', rec, storage)
    config = H.config()
    health = bag_health(bag, config, 'rest')
    np.testing.assert_array_equal(health.stamps_ns, rec.stamps_ns)
    assert not health.doubt.any() and health.consistent.all()
    assert health.report['events'] == []
    assert health.report['set']['consistent'] and health.report['set']['blocks'] > 400
    assert all(entry['level'] == 0 for entry in health.report['sensors'].values())


def test_a_bag_with_a_frozen_and_a_spiking_sensor_names_both(tmp_path):
    rec = H.at_rest(16, 500.0, seed=22)
    frozen, spike = 2500, 6001
    rec.readings[frozen:frozen + 2000, 0] = rec.readings[frozen - 1, 0]
    rec.readings[spike, 1, 1] += 2.5
    bag = write_bag(tmp_path / 'faulty', rec, 'mcap')
    config = H.config()
    health = bag_health(bag, config, 'rest')
    found = [(e['check'], e['sensor'], e['onset_s'], e['detected_s'])
             for e in health.report['events'] if e['check'] != 'inconsistent']
    t = (rec.stamps_ns - H.START_NS) * 1e-9 + H.START_NS * 1e-9
    assert found == [('frozen', 'left', pytest.approx(t[frozen], abs=1e-6),
                      pytest.approx(t[frozen + FROZEN_REPEATS - 1], abs=1e-6)),
                     ('spike', 'right', pytest.approx(t[spike], abs=1e-6),
                      pytest.approx(t[spike + SPIKE_WIDTH], abs=1e-6))]
    left = health.report['sensors']['left']['frozen']
    assert left['episodes'] == 1 and left['flagged'] == 2000 - FROZEN_REPEATS + 1
    assert any(e['check'] == 'inconsistent' and 'left (frozen) explains' in e['detail']
               for e in health.report['events'])
    assert health.doubt[frozen + FROZEN_REPEATS - 1, 0] and not health.doubt[:frozen, 0].any()


def test_a_bag_without_the_topic_is_refused(tmp_path):
    rec = H.at_rest(1, 500.0)
    writer = B.BagWriter(tmp_path / 'one', 'sqlite3')
    for j, stamp in enumerate(rec.stamps_ns.tolist()):
        writer.add('/left/ft_sensor', B.WS, stamp, B.wrench_msg(stamp, 'left_ft', rec.readings[j, 0]))
    with pytest.raises(BagError, match='right/ft_sensor'):
        bag_health(writer.close(), H.config())


def test_analyze_bag_names_a_frozen_and_a_saturated_sensor_in_its_summary_and_index(tmp_path):
    """The two recordings of the issue: ``complete yes`` no longer hides a frozen or a clipped sensor.

    The left sensor repeats its reading at 2 s for 4 s (written here: a constant); in another
    bag its squeeze axis is clipped at 20 N while the truth reaches 25 N.
    """
    from wrench_distribution.bag.index import BagResult, format_index, index_row
    from wrench_distribution.bag.pipeline import analyze_bag, Options
    from wrench_distribution.bag.plots import health_marks
    from wrench_distribution.bag.summary import format_table

    frozen = H.at_rest(8, 500.0, seed=31)
    frozen.readings[1000:3000, 0] = frozen.readings[999, 0]
    clipped = H.at_rest(8, 500.0, seed=32)
    clipped.readings[:, 0, 2] = np.clip(clipped.readings[:, 0, 2], -20.0, 20.0)
    clean = H.at_rest(8, 500.0, seed=33)
    config = H.config(consistency_check='rest')
    results = []
    for name, rec in (('frozen', frozen), ('clipped', clipped), ('clean', clean)):
        bag = write_bag(tmp_path / name, rec, 'mcap')
        summary = analyze_bag(bag, config, tmp_path / f'{name}_out', Options(plots=False))
        assert summary['complete']
        results.append(BagResult(name, str(tmp_path / f'{name}_out'), summary))
    health = [r.summary['health'] for r in results]
    t0 = frozen.stamps_ns[1000] * 1e-9
    assert health[0]['in_doubt'] == ['left']
    assert health[0]['sensors']['left']['frozen']['first_onset_s'] == pytest.approx(t0, abs=1e-6)
    assert 'out_of_range' in health[1]['sensors']['left'] and health[1]['in_doubt'] == ['left']
    assert health[2]['in_doubt'] == [] and health[2]['set']['episodes'] == 0
    assert health[2]['set']['checked'] and health[2]['consistency_check'] == 'rest'
    text = [format_table(r.summary) for r in results]
    assert f'health         left: frozen 1 episode(s) from {t0:.3f} s' in text[0]
    assert 'health         left: out_of_range' in text[1]
    assert 'health         no sensor in doubt' in text[2]
    assert index_row(results[0])['sensors_in_doubt'] == ['left:frozen']
    assert index_row(results[2])['sensors_in_doubt'] == []
    lines = format_index(results).splitlines()
    assert 'DOUBT: left:frozen' in lines[1] and 'DOUBT' not in lines[3]
    # the plots mark each episode's onset: the freeze's first repeat among them
    marks = health_marks(health[0])
    assert (pytest.approx(t0, abs=1e-6), 'left frozen') in marks
    assert marks == sorted(marks) and health_marks(health[2]) == []
    plotted = analyze_bag(write_bag(tmp_path / 'again', frozen, 'mcap'), config,
                          tmp_path / 'again_out', Options(plots=True))
    assert (tmp_path / 'again_out' / 'internal_load.png').stat().st_size > 10_000
    assert plotted['health'] == health[0]
