"""The estimator of tools, biases, mounting rotations and the held object (core/calibration.py).

Readings come from :mod:`calibration_fixtures` (statics written out by hand, not the package's
sensor model). Each estimate is judged against the truth within its own reported 1-sigma, and
the issue's figures (noise 0.05 N / 0.003 N m, 6 orientations x 200 samples) are checked.
"""
from hypothesis import assume, event, given, HealthCheck, settings, strategies as st
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import calibration_fixtures as C

from wrench_distribution.core import calibration as K
from wrench_distribution.core.sensor_model import SensorModel

SIGMAS = 4.0


def _configured(tool: C.Tool) -> SensorModel:
    return SensorModel(position=tool.position, orientation=tool.configured.as_quat(), sign=tool.sign)


def _angle_deg(a: Rotation, b: Rotation) -> float:
    return float(np.degrees((a.inv() * b).magnitude()))


def _within(error, sigma, tiny, what):
    error, sigma = np.atleast_1d(error), np.atleast_1d(sigma)
    assert np.all(np.abs(error) < SIGMAS * sigma + tiny), f'{what}: error {error} against sigma {sigma}'


vectors = st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3).map(np.array)


@st.composite
def tools(draw):
    """Draw a random sensor and tool, mounted slightly off its configured orientation."""
    return C.Tool(
        sign=draw(st.sampled_from([1, -1])), mass=draw(st.floats(0.1, 3.0)),
        com=draw(vectors) * 0.1, bias=draw(vectors.map(lambda v: np.concatenate([5 * v, 0.3 * v[::-1]]))),
        position=draw(vectors) * 0.1, configured=Rotation.from_rotvec(draw(vectors) * 3.0),
        mounting=Rotation.from_rotvec(draw(vectors) * np.radians(4.0)))


poses = st.lists(vectors.map(lambda v: Rotation.from_rotvec(v * 0.9)), min_size=3, max_size=7)


def _spread_enough(rotations) -> bool:
    directions = np.array([r.inv().apply([0.0, 0.0, -1.0]) for r in rotations])
    centred = directions - directions.mean(axis=0)
    return np.linalg.svd(centred, compute_uv=False)[1] > 0.15


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tool=tools(), flange=poses, mounting=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_tool_estimate_within_its_own_sigma(tool, flange, mounting, seed):
    assume(_spread_enough(flange))
    if not mounting:
        tool.mounting = Rotation.identity()
    readings, gravity, labels = C.free_phase(tool, flange, 60, np.random.default_rng(seed))
    estimate = K.identify_tool(readings, gravity, labels, _configured(tool), mounting=mounting)
    _within(estimate.bias - tool.bias, estimate.bias_sigma, 1e-9, 'bias')
    _within(estimate.mass - tool.mass, estimate.mass_sigma, 1e-9, 'mass')
    _within(estimate.com - tool.com, estimate.com_sigma, 1e-9, 'com')
    if mounting:
        found = Rotation.from_quat(estimate.orientation)
        true = tool.configured * tool.mounting
        bound = np.degrees(SIGMAS * np.linalg.norm(estimate.rotation_sigma)) + 1e-6
        assert _angle_deg(found, true) < bound


def test_the_reported_sigma_is_what_the_errors_scatter_by():
    """The 1-sigma is honest: about 68 % of the errors within 1 sigma, their RMS about 1 sigma.

    The 4-sigma bounds above cannot fail on a sigma that is too large; here one tool is
    identified from 24 noise draws (mounting rotation estimated too) and the errors of the
    bias, mass and centre of mass, each divided by its own reported sigma, are pooled
    (240 values; a normal variable has 68.3 % within 1 and an RMS of 1). Measured on 100
    draws: 69.5 % (bias), 73 % (mass), 71 % (centre of mass); RMS 0.92 to 0.97.
    """
    tool = C.Tool(sign=1, mass=0.8, com=np.array([0.01, -0.02, 0.05]),
                  bias=np.array([2.0, -3.0, 4.0, 0.1, -0.2, 0.15]), position=np.array([0.0, 0.0, 0.05]),
                  configured=Rotation.from_rotvec([0.1, 0.2, 0.3]),
                  mounting=Rotation.from_rotvec(np.radians([1.0, -1.5, 0.5])))
    normalised = []
    for seed in range(24):
        readings, gravity, labels = C.free_phase(tool, C.tilts(6), 60, np.random.default_rng(seed))
        estimate = K.identify_tool(readings, gravity, labels, _configured(tool), mounting=True)
        normalised += list((estimate.bias - tool.bias) / estimate.bias_sigma)
        normalised += [(estimate.mass - tool.mass) / estimate.mass_sigma]
        normalised += list((estimate.com - tool.com) / estimate.com_sigma)
    normalised = np.abs(normalised)
    assert 0.58 <= np.mean(normalised < 1.0) <= 0.80, np.mean(normalised < 1.0)
    assert np.mean(normalised < 2.0) >= 0.90, np.mean(normalised < 2.0)
    assert 0.8 <= np.sqrt(np.mean(normalised ** 2)) <= 1.25, np.sqrt(np.mean(normalised ** 2))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(mass=st.floats(0.2, 20.0), com=vectors, tilt=poses, seed=st.integers(0, 2 ** 16),
       scale=st.sampled_from([1.0, 1000.0]))
def test_object_estimate_within_its_own_sigma(mass, com, tilt, seed, scale):
    """Known tools: the object's mass and CoM within 4 sigma; lengths in m or mm alike."""
    assume(_spread_enough(tilt))
    rng = np.random.default_rng(seed)
    truth = [C.Tool(-1, 0.7, np.array([0.0, 0.01, 0.04]), np.zeros(6), np.array([0.0, 0.0, -0.05]),
                    Rotation.identity(), Rotation.identity()),
             C.Tool(1, 0.4, np.array([0.01, 0.0, 0.03]), np.zeros(6), np.zeros(3),
                    Rotation.from_euler('z', 30, degrees=True), Rotation.identity())]
    contacts = np.array([[0.0, 0.25, 0.0, *Rotation.from_euler('x', 90, degrees=True).as_quat()],
                         [0.0, -0.25, 0.05, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])
    readings, gravity, labels = C.held_phase(truth, contacts, mass, com * 0.1, tilt, 60, rng)
    models = [SensorModel(position=t.position * scale, orientation=t.configured.as_quat(), sign=t.sign,
                          tool_mass=t.mass, tool_com=t.com * scale) for t in truth]
    scaled = np.concatenate([contacts[:, :3] * scale, contacts[:, 3:]], axis=1)
    unit = np.array([1.0] * 3 + [scale] * 3)
    resultant = K.object_resultant(readings * unit, gravity, scaled, models)
    estimate = K.identify_object(resultant, gravity, labels)
    _within(estimate.mass - mass, estimate.mass_sigma, 1e-9, 'object mass')
    _within(estimate.com - com * 0.1 * scale, estimate.com_sigma, 1e-9 * scale, 'object com')


def _cell(rng):
    """Two sensors with tools, mounted off by a degree or two, holding a 3.2 kg box."""
    tools_ = [C.Tool(-1, 0.9, np.array([0.01, -0.02, 0.05]), np.array([1.5, -2.0, 0.8, 0.05, -0.03, 0.02]),
                     np.array([0.0, 0.0, -0.05]), Rotation.from_euler('z', 90, degrees=True),
                     Rotation.from_rotvec(np.radians([1.0, -2.0, 0.5]))),
              C.Tool(1, 0.6, np.array([0.0, 0.01, 0.03]), np.array([-1.0, 0.5, 1.2, -0.04, 0.06, 0.01]),
                     np.array([0.0, 0.0, -0.04]), Rotation.identity(),
                     Rotation.from_rotvec(np.radians([-1.5, 0.5, 1.0])))]
    contacts = np.array([[0.0, 0.2, 0.0, *Rotation.from_euler('x', 90, degrees=True).as_quat()],
                         [0.0, -0.2, 0.0, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])
    return tools_, contacts


@pytest.mark.parametrize('bump', [0, 8])
def test_the_issue_figures_six_orientations_of_200_samples(bump):
    """Tools free then object held, 6 x 200 samples each: every target of docs/calibration.md met."""
    rng = np.random.default_rng(29)
    truth, contacts = _cell(rng)
    models, biases = [], []
    for tool in truth:
        readings, gravity, labels = C.free_phase(tool, C.tilts(6), 200, rng, bump=bump)
        estimate = K.identify_tool(readings, gravity, labels, _configured(tool), mounting=True)
        assert estimate.fit.outliers >= bump
        assert abs(estimate.mass - tool.mass) < 0.005
        assert np.all(np.abs(estimate.bias - tool.bias) < [0.02] * 3 + [0.002] * 3)
        assert _angle_deg(Rotation.from_quat(estimate.orientation), tool.configured * tool.mounting) < 0.2
        models.append(SensorModel(position=tool.position, orientation=estimate.orientation, sign=tool.sign,
                                  tool_mass=estimate.mass, tool_com=estimate.com))
        biases.append(estimate.bias)
    mass, com = 3.2, np.array([0.02, -0.01, 0.05])
    readings, gravity, labels = C.held_phase(truth, contacts, mass, com, C.tilts(6), 200, rng)
    obj = K.identify_object(K.object_resultant(readings, gravity, contacts, models, np.array(biases)),
                            gravity, labels)
    assert abs(obj.mass - mass) < max(0.005 * mass, 0.005)
    assert np.linalg.norm(obj.com - com) < 0.002


def test_the_linear_formulation_misses_a_mounting_rotation_that_ours_finds():
    """Without the rotation the fit reports its own misfit (rms well above 1), with it ~1."""
    truth, _ = _cell(np.random.default_rng(3))
    readings, gravity, labels = C.free_phase(truth[0], C.tilts(6), 200, np.random.default_rng(4))
    plain = K.identify_tool(readings, gravity, labels, _configured(truth[0]))
    full = K.identify_tool(readings, gravity, labels, _configured(truth[0]), mounting=True)
    assert plain.fit.rms > 5 and full.fit.rms < 1.5
    assert np.abs(full.bias - truth[0].bias).max() < np.abs(plain.bias - truth[0].bias).max()


def test_one_orientation_is_refused_naming_the_motion():
    tool = _cell(np.random.default_rng(0))[0][0]
    readings, gravity, labels = C.free_phase(tool, C.tilts(1), 200, np.random.default_rng(1))
    with pytest.raises(K.CalibrationRefused, match='share one gravity direction.*tilt the tool by 20 deg'):
        K.identify_tool(readings, gravity, labels, _configured(tool))


def test_a_rotation_about_gravity_teaches_nothing():
    tool = _cell(np.random.default_rng(0))[0][0]
    about_gravity = [Rotation.from_euler('z', a, degrees=True) for a in (0, 60, 120, 180)]
    readings, gravity, labels = C.free_phase(tool, about_gravity, 100, np.random.default_rng(1))
    with pytest.raises(K.CalibrationRefused, match='share one gravity direction'):
        K.identify_tool(readings, gravity, labels, _configured(tool), mounting=True)


def test_two_orientations_leave_the_com_along_their_difference():
    tool = _cell(np.random.default_rng(0))[0][0]
    two = [Rotation.identity(), Rotation.from_euler('x', 30, degrees=True)]
    readings, gravity, labels = C.free_phase(tool, two, 100, np.random.default_rng(1))
    with pytest.raises(K.CalibrationRefused, match='only two directions.*centre of mass along.*mounting rotation'):
        K.identify_tool(readings, gravity, labels, _configured(tool), mounting=True)


def test_object_in_one_orientation_refused_and_nan_refused():
    truth, contacts = _cell(np.random.default_rng(0))
    readings, gravity, labels = C.held_phase(truth, contacts, 2.0, np.zeros(3), C.tilts(1), 50,
                                             np.random.default_rng(1))
    models = [SensorModel(position=t.position, orientation=(t.configured * t.mounting).as_quat(), sign=t.sign,
                          tool_mass=t.mass, tool_com=t.com) for t in truth]
    biases = np.array([t.bias for t in truth])
    resultant = K.object_resultant(readings, gravity, contacts, models, biases)
    with pytest.raises(K.CalibrationRefused, match='centre of mass along gravity is undetermined'):
        K.identify_object(resultant, gravity, labels)
    resultant[3, 2] = np.nan
    with pytest.raises(K.CalibrationRefused, match='1 samples hold NaN'):
        K.identify_object(resultant, gravity, labels)


def test_wrong_sign_is_named():
    """A tool that weighs negative: the sensor's sign is the likely fault."""
    tool = _cell(np.random.default_rng(0))[0][0]
    readings, gravity, labels = C.free_phase(tool, C.tilts(4), 50, np.random.default_rng(1))
    flipped = SensorModel(position=tool.position, orientation=tool.configured.as_quat(), sign=-tool.sign)
    with pytest.raises(K.CalibrationRefused, match='sign is likely wrong'):
        K.identify_tool(readings, gravity, labels, flipped)


small_tilts = st.lists(vectors.map(lambda v: Rotation.from_rotvec(v * np.radians(15.0))), min_size=2, max_size=5)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(tool=tools(), flange=small_tilts, mounting=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_any_poses_refused_or_within_sigma(tool, flange, mounting, seed):
    """Few, close or repeated orientations (degenerate ones included): a refusal, or the truth within 4 sigma."""
    if not mounting:
        tool.mounting = Rotation.identity()
    readings, gravity, labels = C.free_phase(tool, flange, 40, np.random.default_rng(seed))
    try:
        estimate = K.identify_tool(readings, gravity, labels, _configured(tool), mounting=mounting)
    except K.CalibrationRefused as refusal:
        assert 'tilt' in str(refusal) or 'pose' in str(refusal)
        event('refused')
        return
    event('estimated')
    _within(estimate.bias - tool.bias, estimate.bias_sigma, 1e-9, 'bias')
    _within(estimate.mass - tool.mass, estimate.mass_sigma, 1e-9, 'mass')
    _within(estimate.com - tool.com, estimate.com_sigma, 1e-9, 'com')


def test_a_mounting_rotation_beyond_a_hand_mounting_is_refused_naming_the_orientation():
    """A sensor 25 deg off its configured orientation: the configuration is wrong, not the mounting."""
    tool = _cell(np.random.default_rng(0))[0][0]
    tool.mounting = Rotation.from_rotvec(np.radians(25.0) * np.array([0.0, 0.6, 0.8]))
    readings, gravity, labels = C.free_phase(tool, C.tilts(6), 100, np.random.default_rng(1))
    with pytest.raises(K.CalibrationRefused, match=r'turned 25 deg .*beyond a mounting rotation \(10 deg\).*'
                                                   'sensor_orientations is likely wrong'):
        K.identify_tool(readings, gravity, labels, _configured(tool), mounting=True)
