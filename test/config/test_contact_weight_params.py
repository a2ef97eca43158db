"""The contact-weight parameters: checked at start-up with messages that name them."""
import pytest

from wrench_distribution.config import load_distributor_config
from wrench_distribution.config.schema import ConfigError

BASE = {'effectors': ['lf', 'rf', 'lh', 'rh'], 'contact_types': ['point'] * 4, 'contact_source': 'topic'}


@pytest.mark.parametrize('changes, text', [
    ({'contact_weights': [1.0, 0.0]}, "parameter 'contact_weights'"),
    ({'contact_weights': [0.0] * 4}, 'every weight is 0'),
    ({'contact_weights': [1.0, 1.0, 1.0, 1.5]}, "parameter 'contact_weights'"),
    ({'contact_transition_time': -1.0}, "parameter 'contact_transition_time'"),
    ({'on_timeout': 'hold_object_weight'}, "parameter 'on_timeout': hold_object_weight needs object_mass > 0"),
    ({'on_timeout': 'hold'}, "parameter 'on_timeout'"),
])
def test_bad_values_are_refused_naming_the_parameter(changes, text):
    with pytest.raises(ConfigError, match=text):
        load_distributor_config(dict(BASE, **changes))


def test_the_targets_default_to_one_and_the_ramp_is_in_nanoseconds():
    settings = load_distributor_config(dict(BASE)).settings.contact_weights
    assert settings.targets == (1.0,) * 4 and settings.transition_ns == 1_000_000_000
    settings = load_distributor_config(dict(BASE, contact_weights=[1.0, 0.0, 0.5, 1.0],
                                            contact_transition_time=0.25)).settings.contact_weights
    assert settings.targets == (1.0, 0.0, 0.5, 1.0) and settings.transition_ns == 250_000_000
    config = load_distributor_config(dict(BASE, on_timeout='hold_object_weight', object_mass=3.0))
    assert config.settings.input.on_timeout == 'hold_object_weight'
    assert config.topics.contact_weights == 'contact_weights'
    assert config.topics.actual_weights == 'contact_weights/actual'
