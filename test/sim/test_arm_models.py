"""Real arm models: example-robot-data URDFs, bases, grippers, locked fingers."""
from hypothesis import given, settings, strategies as st
import numpy as np
import pinocchio
import pytest

from wrench_distribution.sim.physics.arm_models import load_arm, robot_description, ROBOTS

DEGREES_OF_FREEDOM = {'panda': 7, 'ur5': 6}


def placements(draw_angles, draw_position):
    """Return an SE3 from roll-pitch-yaw angles and a position (test helper)."""
    return pinocchio.SE3(pinocchio.rpy.rpyToMatrix(*draw_angles), np.array(draw_position))


angles = st.tuples(*[st.floats(-np.pi, np.pi)] * 3)
positions = st.tuples(*[st.floats(-2.0, 2.0)] * 3)


@pytest.mark.parametrize('robot', ROBOTS)
def test_the_urdf_is_found_and_the_arm_has_its_joints(robot):
    assert robot_description(robot).is_file()
    arm = load_arm(robot, 'left_arm')
    assert arm.model.nq == arm.model.nv == DEGREES_OF_FREEDOM[robot]
    assert arm.home.shape == arm.lower.shape == (arm.model.nq,)
    assert np.all(arm.lower <= arm.home) and np.all(arm.home <= arm.upper)
    assert np.all(arm.effort_limit > 0) and np.all(arm.velocity_limit > 0)
    assert arm.model.frames[arm.flange_frame].name in ('panda_link8', 'tool0')
    if robot == 'panda':
        assert not any('finger' in name for name in arm.model.names)


def test_bad_input_gets_a_clear_error():
    with pytest.raises(ValueError, match='robot must be one of'):
        load_arm('kuka', 'a')
    with pytest.raises(ValueError, match='gripper_mass'):
        load_arm('ur5', 'a', gripper_mass=-1.0)
    with pytest.raises(ValueError, match='gripper_com'):
        load_arm('ur5', 'a', gripper_com=(0.0, float('nan'), 0.0))


@settings(max_examples=10, deadline=None)
@given(robot=st.sampled_from(ROBOTS), base_angles=angles, base_position=positions,
       seed=st.integers(0, 2**31))
def test_the_base_moves_the_whole_arm_rigidly(robot, base_angles, base_position, seed):
    """Every frame of the mounted arm is the base placement times the unmounted one."""
    base = placements(base_angles, base_position)
    free, mounted = load_arm(robot, 'a'), load_arm(robot, 'a', base)
    q = np.random.default_rng(seed).uniform(free.lower, free.upper)
    free_data, mounted_data = free.model.createData(), mounted.model.createData()
    pinocchio.framesForwardKinematics(free.model, free_data, q)
    pinocchio.framesForwardKinematics(mounted.model, mounted_data, q)
    for frame in range(1, free.model.nframes):
        expected = (base * free_data.oMf[frame]).homogeneous
        assert np.allclose(mounted_data.oMf[frame].homogeneous, expected, atol=1e-12)


@settings(max_examples=10, deadline=None)
@given(robot=st.sampled_from(ROBOTS), mass=st.floats(0.1, 3.0),
       centre=st.tuples(*[st.floats(-0.2, 0.2)] * 3), seed=st.integers(0, 2**31))
def test_the_gripper_weighs_on_the_joints_as_a_point_load_at_its_centre(
        robot, mass, centre, seed):
    """The extra gravity torque is J^T of m g applied at the centre of mass (by hand)."""
    bare = load_arm(robot, 'a')
    loaded = load_arm(robot, 'a', gripper_mass=mass, gripper_com=centre)
    q = np.random.default_rng(seed).uniform(bare.lower, bare.upper)
    extra = (pinocchio.computeGeneralizedGravity(loaded.model, loaded.model.createData(), q)
             - pinocchio.computeGeneralizedGravity(bare.model, bare.model.createData(), q))
    data = bare.model.createData()
    pinocchio.framesForwardKinematics(bare.model, data, q)
    flange = data.oMf[bare.flange_frame]
    centre_world = flange.act(np.array(centre))
    jacobian = pinocchio.computeFrameJacobian(
        bare.model, data, q, bare.flange_frame, pinocchio.LOCAL_WORLD_ALIGNED)
    weight = np.array([0.0, 0.0, -9.81 * mass])
    # Gravity torque = -J^T (weight, (c - p) x weight); generalized gravity is its negative.
    wrench = np.concatenate([weight, np.cross(centre_world - flange.translation, weight)])
    assert np.allclose(extra, -jacobian.T @ wrench, atol=1e-9 * max(1.0, mass))
    assert sum(i.mass for i in loaded.model.inertias) == pytest.approx(
        sum(i.mass for i in bare.model.inertias) + mass)
