#!/usr/bin/env python3
"""Calibration accuracy and time: ft_calib's linear least squares against ours.

Run from the repository root::

    .venv/bin/python benchmarks/bench_calibration.py             # 20 trials per case
    .venv/bin/python benchmarks/bench_calibration.py --trials 3  # smoke run

Simulated data, as in the issue: noise 0.05 N / 0.003 N m, 6 orientations of 200 samples (the
flange tilted 35 deg about six axes of the horizontal plane and left level), readings derived
by hand (statics written out here, not the package's sensor model). Per trial: a random tool
(0.2 to 2 kg, centre of mass within 8 cm), random biases (5 N, 0.3 N m); then an object
(1 to 6 kg) held by two such sensors in 6 orientations (tilted 25 deg), with a squeeze.

Cases: ``clean`` (the sensor mounted as configured), ``mounted 2 deg`` (each sensor turned by
a random 2 deg rotation on its flange), ``bump`` (clean, 10 samples of one pose knocked by
20 N / 1 N m). Methods:

- ``linear``: ft_calib's formulation (unknowns m, m c, force bias, torque bias; one unweighted
  linear least squares over every sample; written here), the object then by linear least
  squares on the resultant with the linear tools;
- ``ours``: ``core.calibration.identify_tool`` (noise-weighted, robust, outliers dropped) and
  ``identify_object``;
- ``ours + mounting``: the same with the mounting rotation estimated jointly.

Printed: the largest error over the trials of each quantity, and the median time of one tool
fit. The issue's targets: object mass 0.5 % (or 5 g), centre of mass 2 mm, tool masses 5 g,
biases 0.02 N / 0.002 N m, mounting rotations 0.2 deg.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path
import statistics
import sys
import time

import numpy as np
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wrench_distribution.core import calibration as K  # noqa: E402
from wrench_distribution.core.sensor_model import SensorModel  # noqa: E402

G = np.array([0.0, 0.0, -9.81])
NOISE = np.array([0.05] * 3 + [0.003] * 3)
CONTACTS = np.array([[0.0, 0.2, 0.0, *Rotation.from_euler('x', 90, degrees=True).as_quat()],
                     [0.0, -0.2, 0.0, *Rotation.from_euler('x', -90, degrees=True).as_quat()]])


def tilts(count: int, degrees: float) -> list:
    """Level, then tilted about ``count - 1`` horizontal axes."""
    axes = [2 * np.pi * j / (count - 1) for j in range(count - 1)]
    return [Rotation.identity()] + [Rotation.from_rotvec(np.radians(degrees) * np.array([np.cos(a), np.sin(a), 0]))
                                    for a in axes]


def reading(truth: dict, applied: np.ndarray, g_contact: np.ndarray, rng) -> np.ndarray:
    """Return a sensor's readings: statics by hand (the sensor holds the tool and pushes the object)."""
    rs = truth['rotation']
    g_s = g_contact @ rs
    f_s = applied[:, :3] @ rs
    t_s = (applied[:, 3:] - np.cross(truth['position'], applied[:, :3])) @ rs
    weight = truth['mass'] * g_s
    held = np.concatenate([f_s - weight, t_s - np.cross(truth['com'], weight)], axis=1)
    return truth['sign'] * held + truth['bias'] + rng.normal(size=held.shape) * NOISE


def random_tool(rng, mounting_deg: float) -> dict:
    """Draw a sensor and its tool; the true orientation is the configured one times the mounting."""
    configured = Rotation.from_rotvec(rng.uniform(-1, 1, 3))
    axis = rng.normal(size=3)
    mounting = Rotation.from_rotvec(np.radians(mounting_deg) * axis / np.linalg.norm(axis))
    return {'sign': int(rng.choice([-1, 1])), 'mass': rng.uniform(0.2, 2.0), 'com': rng.uniform(-0.08, 0.08, 3),
            'bias': np.concatenate([rng.uniform(-5, 5, 3), rng.uniform(-0.3, 0.3, 3)]),
            'position': np.array([0.0, 0.0, -0.05]), 'configured': configured,
            'true': configured * mounting, 'rotation': (configured * mounting).as_matrix()}


def free_data(truth: dict, rng, bump: bool) -> tuple:
    """6 poses x 200 samples with the tool free."""
    readings, gravity, labels = [], [], []
    for j, rotation in enumerate(tilts(6, 35.0)):
        g = np.tile(rotation.inv().apply(G), (200, 1))
        r = reading(truth, np.zeros((200, 6)), g, rng)
        if bump and j == 2:
            r[:10] += [20.0, -15.0, 10.0, 1.0, -1.0, 0.5]
        readings.append(r)
        gravity.append(g)
        labels.append(np.full(200, j))
    return np.concatenate(readings), np.concatenate(gravity), np.concatenate(labels)


def held_data(tools: list, mass: float, com: np.ndarray, rng) -> tuple:
    """6 poses x 200 samples with the object held by both sensors (half the weight each, a squeeze)."""
    readings, gravity, labels = [], [], []
    for j, rotation in enumerate(tilts(6, 25.0)):
        g_o = rotation.inv().apply(G)
        weight = mass * g_o
        need = -np.concatenate([weight, np.cross(com, weight)])
        first = np.zeros(6)
        first[:3] = need[:3] / 2 + [0.0, -15.0, 0.0]
        first[3:] = np.cross(CONTACTS[0, :3], first[:3])
        world = [first, need - first]
        per = np.zeros((200, 2, 6))
        for i, tool in enumerate(tools):
            r = Rotation.from_quat(CONTACTS[i, 3:]).as_matrix()
            f_c = r.T @ world[i][:3]
            t_c = r.T @ (world[i][3:] - np.cross(CONTACTS[i, :3], world[i][:3]))
            per[:, i] = reading(tool, np.tile(np.concatenate([f_c, t_c]), (200, 1)), np.tile(r.T @ g_o, (200, 1)), rng)
        readings.append(per)
        gravity.append(np.tile(g_o, (200, 1)))
        labels.append(np.full(200, j))
    return np.concatenate(readings), np.concatenate(gravity), np.concatenate(labels)


def linear_tool(readings: np.ndarray, g_contact: np.ndarray, sensor: SensorModel) -> dict:
    """ft_calib: ``r = b - s [m g; (m c) x g]``, unknowns (m, m c, b_f, b_t), unweighted, all samples."""
    g = g_contact @ sensor.rotation
    k = len(g)
    design = np.zeros((k, 6, 10))
    design[:, :3, 0] = -sensor.sign * g
    skew = np.zeros((k, 3, 3))  # (m c) x g = -[g]x (m c)
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -g[:, 2], g[:, 1], -g[:, 0]
    skew = skew - skew.transpose(0, 2, 1)
    design[:, 3:, 1:4] = sensor.sign * skew
    design[:, :, 4:] = np.eye(6)
    x = np.linalg.lstsq(design.reshape(-1, 10), readings.ravel(), rcond=None)[0]
    return {'mass': x[0], 'com': x[1:4] / x[0], 'bias': x[4:], 'orientation': sensor.orientation}


def linear_object(resultant: np.ndarray, gravity: np.ndarray) -> tuple:
    """Linear least squares of ``sum h = -[M g; (M c) x g]`` in (M, M c)."""
    k = len(gravity)
    design = np.zeros((k, 6, 4))
    design[:, :3, 0] = -gravity
    skew = np.zeros((k, 3, 3))
    skew[:, 0, 1], skew[:, 0, 2], skew[:, 1, 2] = -gravity[:, 2], gravity[:, 1], -gravity[:, 0]
    skew = skew - skew.transpose(0, 2, 1)
    design[:, 3:, 1:] = skew  # -(M c) x g = [g]x (M c)
    x = np.linalg.lstsq(design.reshape(-1, 4), resultant.ravel(), rcond=None)[0]
    return x[0], x[1:] / x[0]


def ours_tool(readings, g_contact, labels, sensor, mounting) -> dict:
    est = K.identify_tool(readings, g_contact, labels, sensor, mounting)
    return {'mass': est.mass, 'com': est.com, 'bias': est.bias, 'orientation': est.orientation}


def trial(rng, mounting_deg: float, bump: bool) -> dict:
    """One trial of every method; errors and tool-fit times."""
    tools = [random_tool(rng, mounting_deg) for _ in range(2)]
    mass, com = rng.uniform(1.0, 6.0), rng.uniform(-0.05, 0.05, 3)
    free = [free_data(t, rng, bump) for t in tools]
    held = held_data(tools, mass, com, rng)
    out = {}
    methods = {'linear': lambda r, g, lab, s: linear_tool(r, g, s),
               'ours': lambda r, g, lab, s: ours_tool(r, g, lab, s, False),
               'ours + mounting': lambda r, g, lab, s: ours_tool(r, g, lab, s, True)}
    for name, fit in methods.items():
        errors = {'tool mass g': 0.0, 'tool com mm': 0.0, 'force bias N': 0.0, 'torque bias N m': 0.0,
                  'mounting deg': 0.0}
        models, biases, times = [], [], []
        for t, (r, g, lab) in zip(tools, free):
            sensor = SensorModel(position=t['position'], orientation=t['configured'].as_quat(), sign=t['sign'])
            start = time.perf_counter()
            est = fit(r, g, lab, sensor)
            times.append(time.perf_counter() - start)
            errors['tool mass g'] = max(errors['tool mass g'], 1e3 * abs(est['mass'] - t['mass']))
            errors['tool com mm'] = max(errors['tool com mm'], 1e3 * np.linalg.norm(est['com'] - t['com']))
            errors['force bias N'] = max(errors['force bias N'], np.abs(est['bias'][:3] - t['bias'][:3]).max())
            errors['torque bias N m'] = max(errors['torque bias N m'], np.abs(est['bias'][3:] - t['bias'][3:]).max())
            angle = np.degrees((Rotation.from_quat(est['orientation']).inv() * t['true']).magnitude())
            errors['mounting deg'] = max(errors['mounting deg'], angle)
            models.append(SensorModel(position=t['position'], orientation=est['orientation'], sign=t['sign'],
                                      tool_mass=max(est['mass'], 0.0), tool_com=est['com']))
            biases.append(est['bias'])
        resultant = K.object_resultant(held[0], held[1], CONTACTS, models, np.array(biases))
        if name == 'linear':
            m_est, c_est = linear_object(resultant, held[1])
        else:
            obj = K.identify_object(resultant, held[1], held[2])
            m_est, c_est = obj.mass, obj.com
        errors['object mass %'] = 100 * abs(m_est - mass) / mass
        errors['object com mm'] = 1e3 * np.linalg.norm(c_est - com)
        errors['time ms'] = 1e3 * statistics.median(times)
        out[name] = errors
    return out


def main(argv=None) -> int:
    """Run the trials and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trials', type=int, default=20)
    parser.add_argument('--seed', type=int, default=29)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f'# bench_calibration: {args.trials} trials per case, seed {args.seed}, {os.cpu_count()} cores; '
          'largest error over the trials (time: median of the per-trial median tool fit)')
    columns = ['tool mass g', 'tool com mm', 'force bias N', 'torque bias N m', 'mounting deg',
               'object mass %', 'object com mm', 'time ms']
    print('| case | method | ' + ' | '.join(columns) + ' |')
    print('|---|---|' + '---|' * len(columns))
    for case, mounting_deg, bump in (('clean', 0.0, False), ('mounted 2 deg', 2.0, False), ('bump', 0.0, True)):
        runs = [trial(rng, mounting_deg, bump) for _ in range(args.trials)]
        for method in runs[0]:
            cells = []
            for column in columns:
                values = [r[method][column] for r in runs]
                value = statistics.median(values) if column == 'time ms' else max(values)
                cells.append(f'{value:.3g}')
            print(f'| {case} | {method} | ' + ' | '.join(cells) + ' |')
    return 0


if __name__ == '__main__':
    sys.exit(main())
