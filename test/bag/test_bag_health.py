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
