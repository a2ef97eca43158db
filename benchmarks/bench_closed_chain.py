#!/usr/bin/env python3
"""Cost of the closed-chain dynamics of arms with joints against Pinocchio's own.

Run from the repository root::

    .venv/bin/python benchmarks/bench_closed_chain.py            # full run (under a minute)
    .venv/bin/python benchmarks/bench_closed_chain.py --quick    # smoke run

For 2 to 8 arms, all UR5 (6 joints) or all Panda (7 joints), holding one object from a
circle of grasps (closed, random joint configurations, admissible velocities), it measures:

(a) ``ClosedChain.accelerations``: the seed's algorithm 4.9 (Pinocchio's C++ per arm, the
    ``6l x 6l`` system in numpy);
(b) the ``6l x 6l`` solve of ``Omega f = ...`` alone (the O(l^3) part);
(c) ``pinocchio.constraintDynamics`` on one model holding every arm and the object as a
    free-flyer, ``CONTACT_6D`` per grasp, default proximal settings (one C++ call);
(d) ``ClosedChain.step``: one classical RK4 step (four evaluations of (a)).

It prints the best of several medians in microseconds, the ratio (a)/(c), and the real-time
factor of two Pandas at 1 kHz (1 ms over (d)): with the grasps compliant (the pads of the
``dual_arm_joints`` demo: 3000 N/m, 60 N*m/rad, damped), rigid with Baumgarte (the default),
and rigid with Aghili's projection instead. The machine is shared: compare ratios measured
in one run.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import time

for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_var, '1')
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from wrench_distribution.sim.physics.arm_models import load_arm, pinocchio  # noqa: E402
from wrench_distribution.sim.physics.chain_grasps import minimum_norm_solve  # noqa: E402
from wrench_distribution.sim.physics.closed_chain import ChainState, ClosedChain, Grasp  # noqa: E402

LOCAL = pinocchio.ReferenceFrame.LOCAL


def closed_system(robot: str, count: int, seed: int = 0) -> tuple:
    """Return ``(chain, state, torques)``: ``count`` arms around a 2 kg object, closed.

    Each arm is mounted so that its flange, at a random configuration, sits on its grasp
    (a circle of radius 0.15 m, flange z toward the centre); velocities are admissible.
    """
    rng = np.random.default_rng(seed)
    object_placement = pinocchio.SE3(np.eye(3), np.array([0.5, 0.0, 0.6]))
    arms, grasps, configurations, velocities = [], [], [], []
    object_velocity = rng.uniform(-0.5, 0.5, 6)
    for index in range(count):
        angle = 2.0 * np.pi * index / count
        turn = pinocchio.utils.rotate('z', angle) @ pinocchio.utils.rotate('y', np.pi / 2)
        grasp = pinocchio.SE3(turn, turn @ np.array([0.0, 0.0, -0.15]))
        bare = load_arm(robot, 'bare')
        q = rng.uniform(bare.lower, bare.upper)
        data = bare.model.createData()
        pinocchio.framesForwardKinematics(bare.model, data, q)
        base = object_placement * grasp * data.oMf[bare.flange_frame].inverse()
        arm = load_arm(robot, f'arm{index}', base, 0.7)
        data = arm.model.createData()
        jacobian = pinocchio.computeFrameJacobian(arm.model, data, q, arm.flange_frame, LOCAL)
        target = grasp.inverse().action @ object_velocity  # the object's twist at the flange
        arms.append(arm)
        grasps.append(Grasp(grasp))
        configurations.append(q)
        velocities.append(np.linalg.lstsq(jacobian, target, rcond=None)[0])
    inertia = pinocchio.Inertia.FromBox(2.0, 0.3, 0.2, 0.2)
    chain = ClosedChain(arms, inertia, grasps)
    state = ChainState(configurations, velocities, object_placement, object_velocity)
    torques = [rng.uniform(-5.0, 5.0, arm.model.nv) for arm in arms]
    return chain, state, torques


def pinocchio_call(chain: ClosedChain, state: ChainState, torques: list):
    """Return a no-argument callable running ``pinocchio.constraintDynamics`` once."""
    model = pinocchio.Model()
    for index, arm in enumerate(chain.arms):
        renamed = pinocchio.Model(arm.model)
        for joint in range(renamed.njoints):
            renamed.names[joint] = f'a{index}_{renamed.names[joint]}'
        for frame in renamed.frames:
            frame.name = f'a{index}_{frame.name}'
        model = pinocchio.appendModel(model, renamed, 0, pinocchio.SE3.Identity())
    body = model.addJoint(0, pinocchio.JointModelFreeFlyer(), pinocchio.SE3.Identity(), 'obj')
    model.appendBodyToJoint(body, chain.object_inertia, pinocchio.SE3.Identity())
    constraints = []
    for index, (arm, grasp) in enumerate(zip(chain.arms, chain.grasps)):
        frame = model.frames[model.getFrameId(
            f'a{index}_{arm.model.frames[arm.flange_frame].name}')]
        constraints.append(pinocchio.RigidConstraintModel(
            pinocchio.ContactType.CONTACT_6D, model, frame.parentJoint, frame.placement,
            body, grasp.object_to_grasp, LOCAL))
    constraints = pinocchio.StdVec_RigidConstraintModel(constraints)
    datas = pinocchio.StdVec_RigidConstraintData([c.createData() for c in constraints])
    data = model.createData()
    pinocchio.initConstraintDynamics(model, data, constraints, datas)
    q = np.concatenate(state.q + [pinocchio.SE3ToXYZQUAT(state.object_placement)])
    v = np.concatenate(state.v + [state.object_velocity])
    tau = np.concatenate(torques + [np.zeros(6)])
    proximal = pinocchio.ProximalSettings()
    return lambda: pinocchio.constraintDynamics(model, data, q, v, tau, constraints, datas,
                                                proximal)


def best_median(function, calls: int, repeats: int) -> float:
    """Return the best of ``repeats`` medians of ``calls`` timed calls, in microseconds."""
    medians = []
    for _ in range(repeats):
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            function()
            times.append(time.perf_counter() - start)
        medians.append(statistics.median(times))
    return 1e6 * min(medians)


def measure(robot: str, count: int, calls: int, repeats: int) -> dict:
    """Time (a)-(d) for one system."""
    chain, state, torques = closed_system(robot, count)
    omega_size = 6 * count
    rng = np.random.default_rng(1)
    factor = rng.normal(size=(omega_size, omega_size))
    omega, right = factor @ factor.T + omega_size * np.eye(omega_size), rng.normal(
        size=omega_size)
    return {
        'ours': best_median(lambda: chain.accelerations(state, torques), calls, repeats),
        'solve': best_median(lambda: minimum_norm_solve(omega, right, chain.rcond), calls,
                             repeats),
        'pinocchio': best_median(pinocchio_call(chain, state, torques), calls, repeats),
        'step': best_median(lambda: chain.step(state, torques, 1e-3), calls // 4, repeats),
    }


def main() -> None:
    """Print the table and the real-time factor."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='smoke run: 2 and 3 arms')
    arguments = parser.parse_args()
    counts = (2, 3) if arguments.quick else (2, 3, 4, 6, 8)
    calls, repeats = (20, 2) if arguments.quick else (200, 5)
    print('robot  arms  joints  accelerations_us  per_arm_us  omega_solve_us  '
          'pinocchio_us  ours/pinocchio  rk4_step_us')
    for robot in ('ur5', 'panda'):
        for count in counts:
            row = measure(robot, count, calls, repeats)
            joints = count * (6 if robot == 'ur5' else 7)
            print(f'{robot:5}  {count:4}  {joints:6}  {row["ours"]:16.1f}  '
                  f'{row["ours"] / count:10.1f}  {row["solve"]:14.1f}  '
                  f'{row["pinocchio"]:12.1f}  {row["ours"] / row["pinocchio"]:14.2f}  '
                  f'{row["step"]:11.1f}')
    chain, state, torques = closed_system('panda', 2)
    pads = [Grasp(grasp.object_to_grasp, np.repeat([3000.0, 60.0], 3), np.repeat([60.0, 0.4], 3))
            for grasp in chain.grasps]
    compliant = ClosedChain(chain.arms, chain.object_inertia, pads)
    step = best_median(lambda: compliant.step(state, torques, 1e-3), calls, repeats)
    print(f'two Pandas, compliant grasps, RK4 at 1 kHz: one step {step:.1f} us, real-time '
          f'factor {1000.0 / step:.2f} on one core')
    step = best_median(lambda: chain.step(state, torques, 1e-3), calls, repeats)
    print(f'two Pandas, RK4 at 1 kHz: one step {step:.1f} us, real-time factor '
          f'{1000.0 / step:.2f} on one core')
    projected = ClosedChain(chain.arms, chain.object_inertia, chain.grasps,
                            stabilisation_frequency=0.0, projection_tolerance=1e-9)
    step = best_median(lambda: projected.step(state, torques, 1e-3), calls, repeats)
    print(f'two Pandas, RK4 + Aghili projection at 1 kHz: one step {step:.1f} us, '
          f'real-time factor {1000.0 / step:.2f} on one core')


if __name__ == '__main__':
    main()
