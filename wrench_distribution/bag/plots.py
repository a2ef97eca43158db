"""PNG plots of the internal load and of the per-effector constraint wrenches.

A long bag is plotted from a uniformly decimated copy of the samples (at most
:data:`MAX_POINTS` per series), so memory stays bounded.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from wrench_distribution.engine.results import ChunkResult
from .columns import COMPONENTS

MAX_POINTS = 2000


class PlotBuffer:
    """Keeps every ``stride``-th sample; doubles the stride when it fills up."""

    def __init__(self, max_points: int = MAX_POINTS) -> None:
        self.max_points = max_points
        self.stride = 1
        self._seen = 0
        self.t: list[np.ndarray] = []
        self.lam: list[np.ndarray] = []
        self.norm: list[np.ndarray] = []
        self.constraint: list[np.ndarray] = []
        self._size = 0

    def add(self, chunk: ChunkResult) -> None:
        """Keep the decimated part of a chunk."""
        k = len(chunk)
        if not k:
            return
        first = (-self._seen) % self.stride
        idx = np.arange(first, k, self.stride)
        self._seen += k
        self.t.append(chunk.stamp_ns[idx])
        self.lam.append(chunk.internal_load[idx])
        self.norm.append(chunk.internal_load_norm[idx])
        self.constraint.append(chunk.constraint[idx])
        self._size += len(idx)
        while self._size > self.max_points:
            self._halve()

    def _halve(self) -> None:
        t, lam, norm, con = self.arrays()
        # kept global indices are multiples of the stride: every other one is a
        # multiple of the doubled stride
        keep = slice(0, None, 2)
        self.t, self.lam = [t[keep]], [lam[keep]]
        self.norm, self.constraint = [norm[keep]], [con[keep]]
        self.stride *= 2
        self._size = len(self.t[0])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(stamps ns, internal load, norm, constraint)`` of the kept samples."""
        if not self.t:
            return np.empty(0, np.int64), np.empty((0, 0)), np.empty(0), np.empty((0, 0, 6))
        return (np.concatenate(self.t), np.concatenate(self.lam),
                np.concatenate(self.norm), np.concatenate(self.constraint))


_PRELOAD: list = []


def preload() -> None:
    """Import matplotlib (Agg) in a background thread while the bag is analysed.

    The import costs about a second; numpy and pyarrow release the GIL for most of the
    analysis, so the two overlap. :func:`write_plots` waits for it.
    """
    import threading
    if not _PRELOAD:
        _PRELOAD.append(threading.Thread(target=_import_pyplot, daemon=True,
                                         name='matplotlib-preload'))
        _PRELOAD[0].start()


def _import_pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def write_plots(out_dir: Path, buffer: PlotBuffer, effectors: Sequence[str],
                basis_names: Sequence[str], basis_units: Sequence[str],
                frame: str = 'contact') -> list[Path]:
    """Write ``internal_load.png`` and ``constraint_wrenches.png``; return their paths."""
    if _PRELOAD:
        _PRELOAD[0].join()
    plt = _import_pyplot()

    t_ns, lam, norm, con = buffer.arrays()
    t = (t_ns - t_ns[0]) * 1e-9 if len(t_ns) else np.empty(0)
    t0 = t_ns[0] * 1e-9 if len(t_ns) else 0.0
    paths = []

    fig, axes = plt.subplots(2, 1, sharex=True, figsize=(10, 7))
    units = list(basis_units) + ['N'] * (len(basis_names) - len(basis_units))
    for unit, ax in zip(('N', 'N*m'), axes):
        cols = [j for j, u in enumerate(units) if u == unit]
        for j in cols:
            ax.plot(t, lam[:, j] if lam.size else [], lw=0.8, label=basis_names[j])
        if unit == 'N':
            ax.plot(t, norm, 'k--', lw=1.0, label='internal_load_norm')
        ax.set_ylabel(f'internal load [{unit}]')
        ax.grid(True, alpha=0.3)
        if cols or unit == 'N':
            ax.legend(fontsize=7, ncol=3, loc='upper right')
    axes[-1].set_xlabel(f'time since {t0:.3f} s (header stamps) [s]')
    fig.suptitle('Internal load (lambda_c) over time')
    fig.subplots_adjust(left=0.09, right=0.98, top=0.93, bottom=0.08, hspace=0.25, wspace=0.25)
    paths.append(Path(out_dir) / 'internal_load.png')
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    n = len(effectors)
    fig, axes = plt.subplots(n, 2, sharex=True, figsize=(11, 2.2 * n + 1), squeeze=False)
    for i, eff in enumerate(effectors):
        for c in range(6):
            ax = axes[i, c // 3]
            ax.plot(t, con[:, i, c] if con.size else [], lw=0.8, label=COMPONENTS[c])
        axes[i, 0].set_ylabel(f'{eff}\nforce [N]')
        axes[i, 1].set_ylabel('torque [N*m]')
        for ax in axes[i]:
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc='upper right')
    for ax in axes[-1]:
        ax.set_xlabel(f'time since {t0:.3f} s [s]')
    fig.suptitle(f'Constraint wrenches per effector ({frame} frame)')
    fig.subplots_adjust(left=0.09, right=0.98, top=0.93, bottom=0.08, hspace=0.25, wspace=0.25)
    paths.append(Path(out_dir) / 'constraint_wrenches.png')
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths
