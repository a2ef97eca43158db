"""Directory mode: every bag under a directory, analysed in parallel on the local cores."""
from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

from .errors import BagError


def find_bags(root: Path) -> list[Path]:
    """Bag directories (holding ``metadata.yaml``) under ``root``, sorted."""
    return sorted(p.parent for p in Path(root).rglob('metadata.yaml'))


def is_bag(path: Path) -> bool:
    """True when ``path`` is one rosbag2 bag directory."""
    return (Path(path) / 'metadata.yaml').is_file()


def _worker(job: tuple) -> tuple[str, dict | None, str | None]:
    bag, out, config_path, options = job
    from wrench_distribution.params import ConfigError, load_analyzer_config

    from .pipeline import analyze_bag
    try:
        config = load_analyzer_config(config_path, options.node_name)
        return str(bag), analyze_bag(Path(bag), config, Path(out), options,
                                     config_name=str(config_path)), None
    except (BagError, ConfigError) as err:
        return str(bag), None, str(err)
    except Exception as err:  # noqa: BLE001 -- reported per bag, never a traceback
        return str(bag), None, f'internal error: {type(err).__name__}: {err}'


def analyze_directory(root: Path, config_path: Path, out_dir: Path, options: Any,
                      jobs: int | None = None, show_progress: bool = False
                      ) -> list[tuple[str, dict | None, str | None]]:
    """Analyse every bag under ``root`` into ``out_dir/<relative path>``.

    :param jobs: worker processes; default: the number of usable cores.
    :returns: ``(bag, summary or None, error or None)`` per bag, in path order.
    """
    bags = find_bags(root)
    if not bags:
        raise BagError(f'{root} is neither a bag (no metadata.yaml) nor a directory of bags')
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    jobs = max(1, min(jobs or cores or 1, len(bags)))
    options.progress = False
    work = [(b, Path(out_dir) / b.relative_to(root), config_path, options) for b in bags]
    results = []
    if jobs == 1:
        for job in work:
            results.append(_worker(job))
            _tick(len(results), len(work), show_progress)
    else:
        ctx = multiprocessing.get_context('spawn')
        with ctx.Pool(jobs) as pool:
            for res in pool.imap_unordered(_worker, work):
                results.append(res)
                _tick(len(results), len(work), show_progress)
    if show_progress:
        sys.stderr.write('\n')
    order = {str(b): i for i, b in enumerate(bags)}
    return sorted(results, key=lambda r: order[r[0]])


def _tick(done: int, total: int, show: bool) -> None:
    if show:
        sys.stderr.write(f'\ranalysed {done}/{total} bags')
        sys.stderr.flush()


def format_index(results: list[tuple[str, dict | None, str | None]]) -> str:
    """One line per bag: samples, span, max residual, internal-load norm, or the error."""
    width = max(len(r[0]) for r in results)
    lines = [f"{'bag':<{width}}  {'samples':>9} {'span [s]':>10} {'max resid':>10} "
             f"{'|lambda| mean':>13} {'|lambda| max':>12}"]
    for bag, s, err in results:
        if err:
            lines.append(f'{bag:<{width}}  error: {err}')
            continue
        norm = s['internal_load_norm']
        lines.append(f"{bag:<{width}}  {s['samples']:>9} {s['time_span']['duration']:>10.3f} "
                     f"{s['max_resultant_residual']:>10.3g} {norm.get('mean', 0):>13.6g} "
                     f"{norm.get('max', 0):>12.6g}")
    return '\n'.join(lines)
