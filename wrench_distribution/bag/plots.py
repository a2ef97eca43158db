"""PNG plots of the internal load and of the per-effector internal and constraint wrenches.

A long bag is plotted from a uniformly decimated copy of the samples (at most
:data:`MAX_POINTS` per series), so memory stays bounded.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

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
        self.internal: list[np.ndarray] = []
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
        self.internal.append(chunk.internal[idx])
        self._size += len(idx)
        while self._size > self.max_points:
            self._halve()

    def _halve(self) -> None:
        t, lam, norm, con, internal = self.arrays()
        # kept global indices are multiples of the stride: every other one is a
        # multiple of the doubled stride
        keep = slice(0, None, 2)
        self.t, self.lam = [t[keep]], [lam[keep]]
        self.norm, self.constraint, self.internal = [norm[keep]], [con[keep]], [internal[keep]]
        self.stride *= 2
        self._size = len(self.t[0])

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(stamps ns, internal load, norm, constraint, internal wrench)`` of the kept samples."""
        if not self.t:
            return (np.empty(0, np.int64), np.empty((0, 0)), np.empty(0), np.empty((0, 0, 6)),
                    np.empty((0, 0, 6)))
        width = max(part.shape[1] for part in self.lam)  # the union of the bases grew: NaN before
        lam = [np.pad(part, ((0, 0), (0, width - part.shape[1])), constant_values=np.nan) for part in self.lam]
        return (np.concatenate(self.t), np.concatenate(lam), np.concatenate(self.norm),
                np.concatenate(self.constraint), np.concatenate(self.internal))


#: Columns of the per-effector figure: (title, quantity, first component, unit).
EFFECTOR_COLUMNS = (('internal force (applied by the effector)', 'internal', 0, 'N'),
                    ('constraint force (h_c = h_m - h)', 'constraint', 0, 'N'),
                    ('internal torque', 'internal', 3, 'N*m'),
                    ('constraint torque', 'constraint', 3, 'N*m'))


_PRELOAD: list = []


def preload() -> None:
    """Import matplotlib (Agg) in a background thread while the bag is analysed.

    The import costs about a second; numpy and pyarrow release the GIL for most of the
    analysis, so the two overlap. :func:`write_plots` waits for it, and so does the
    interpreter's exit (not a daemon thread): a command that fails at once must not finalize
    the interpreter while the thread is inside matplotlib's C++ extensions (a fresh ``make test``
    saw the process abort there, "GIL released", "Python runtime state: finalizing").
    """
    import threading
    if not _PRELOAD:
        _PRELOAD.append(threading.Thread(target=_import_pyplot, daemon=False,
                                         name='matplotlib-preload'))
        _PRELOAD[0].start()


def _import_pyplot():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    return plt


def health_marks(health: Optional[dict]) -> list:
    """Return the onsets a summary's sensor health marks on the plots: ``[(stamp s, label)]``.

    :param health: the summary's ``health`` (:func:`~wrench_distribution.engine.health_report.health_summary`), or None.
    :return: one mark per episode listed, in time order (``left frozen``, ``set inconsistent``).
    """
    if not health:
        return []
    return sorted((e['onset_s'], f"{e['sensor'] or 'set'} {e['check']}")
                  for e in health['events'] if e['onset_s'] is not None)


def write_plots(out_dir: Path, buffer: PlotBuffer, effectors: Sequence[str],
                basis_names: Sequence[str], basis_units: Sequence[str],
                frame: str = 'contact', marks: Sequence = ()) -> list[Path]:
    """Write ``internal_load.png`` and ``constraint_wrenches.png``; return their paths.

    :param out_dir: output directory.
    :param buffer: the decimated samples.
    :param effectors: effector names, in sample order.
    :param basis_names: names of the internal-load elements.
    :param basis_units: their units.
    :param frame: frame of the per-effector wrenches (for the titles).
    :param marks: ``(stamp s, label)`` drawn on the internal load (:func:`health_marks`).
    :return: the two paths.
    """
    if _PRELOAD:
        _PRELOAD[0].join()
    plt = _import_pyplot()

    t_ns, lam, norm, con, internal = buffer.arrays()
    t = (t_ns - t_ns[0]) * 1e-9 if len(t_ns) else np.empty(0)
    t0 = t_ns[0] * 1e-9 if len(t_ns) else 0.0
    paths = [_plot_internal_load(plt, Path(out_dir), t, t0, lam, norm, basis_names, basis_units,
                                 marks),
             _plot_effectors(plt, Path(out_dir), t, t0, {'constraint': con, 'internal': internal},
                             effectors, frame)]
    return paths


def _plot_internal_load(plt, out_dir: Path, t, t0: float, lam, norm, basis_names,
                        basis_units, marks: Sequence = ()) -> Path:
    """Plot the internal load's coordinates (N and N*m elements apart), its norm, the doubts' onsets."""
    fig, axes = plt.subplots(2, 1, sharex=True, figsize=(10, 7))
    for stamp, label in marks[:20]:  # a sensor in doubt from here: the read-out may be wrong
        for ax in axes:
            ax.axvline(stamp - t0, color='r', lw=0.8, ls=':')
        axes[0].annotate(label, (stamp - t0, 1.0), xycoords=('data', 'axes fraction'),
                         rotation=90, va='top', ha='right', fontsize=7, color='r')
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
    path = out_dir / 'internal_load.png'
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _plot_effectors(plt, out_dir: Path, t, t0: float, parts: dict, effectors, frame: str) -> Path:
    """Plot, per effector, the internal wrench beside the constraint wrench.

    The internal wrench is the one the effector applies (a 20 N squeeze plots at +20 N along
    the pair line); the constraint wrench is the paper's ``h_c = h_m - h``, its opposite.
    """
    n = len(effectors)
    fig, axes = plt.subplots(n, len(EFFECTOR_COLUMNS), sharex=True, figsize=(16, 2.2 * n + 1.2),
                             squeeze=False)
    for i, eff in enumerate(effectors):
        for column, (title, part, first, unit) in enumerate(EFFECTOR_COLUMNS):
            ax = axes[i, column]
            values = parts[part]
            for c in range(first, first + 3):
                ax.plot(t, values[:, i, c] if values.size else [], lw=0.8, label=COMPONENTS[c])
            ax.set_ylabel(f'{eff}\n[{unit}]' if column == 0 else f'[{unit}]')
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc='upper right')
            if i == 0:
                ax.set_title(title, fontsize=9)
    for ax in axes[-1]:
        ax.set_xlabel(f'time since {t0:.3f} s [s]')
    fig.suptitle(f'Internal and constraint wrenches per effector ({frame} frame, about the contact point)')
    fig.subplots_adjust(left=0.06, right=0.99, top=0.9, bottom=0.08, hspace=0.3, wspace=0.25)
    path = out_dir / 'constraint_wrenches.png'
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
