"""Directory mode: every bag under a directory, one Dask task per bag.

The same code path serves every scheduler: :func:`analyze_directory` submits
:func:`analyze_one` once per bag to a ``distributed.Client`` and collects the
results as they finish. The client connects to an existing cluster
(``--scheduler tcp://host:8786``) or to a local cluster of worker processes that it
starts on the loopback interface (``--scheduler local``, and the default, with
``--jobs`` workers). A bag that fails, or whose worker dies, gives a row with its
error; it never stops the others.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import Any, Optional
import uuid

from .errors import BagError, IncompleteBag
from .index import BagResult, write_index
from .progress import Progress


def find_bags(root: Path) -> list[Path]:
    """Bag directories (holding ``metadata.yaml``) under ``root``, sorted."""
    return sorted(p.parent for p in Path(root).rglob('metadata.yaml'))


def is_bag(path: Path) -> bool:
    """Return True when ``path`` is one rosbag2 bag directory."""
    return (Path(path) / 'metadata.yaml').is_file()


def analyze_one(bag: str, out: str, config: Any, options: Any,
                config_name: str = '') -> BagResult:
    """Analyse one bag into ``out`` (runs on a worker); never raises.

    :param config: the analyzer's configuration (sent to the worker whole, so that it needs
        the bag and the output directory, not the config file).
    """
    from wrench_distribution.config.schema import ConfigError

    from .pipeline import analyze_bag
    try:
        summary = analyze_bag(Path(bag), config, Path(out), options, config_name=config_name)
        return BagResult(bag, out, summary=summary)
    except IncompleteBag as err:  # counted as a failure, with what was read in its row
        return BagResult(bag, out, summary=err.summary, error=str(err))
    except (BagError, ConfigError) as err:
        return BagResult(bag, out, error=str(err))
    except MemoryError:
        return BagResult(bag, out, error='out of memory; use a smaller --chunk')
    except Exception as err:  # noqa: BLE001 -- reported per bag, never a traceback
        return BagResult(bag, out, error=f'internal error: {type(err).__name__}: {err}')


def usable_cores() -> int:
    """Cores this process may run on."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def local_cluster(workers: int) -> Any:
    """Start a Dask cluster of ``workers`` single-threaded processes on the loopback interface.

    Without the dashboard (nothing listens beyond this machine). The cluster's own logs print
    only at ``CRITICAL``: under load, a worker's heartbeat racing the scheduler's shutdown
    printed a traceback after every bag was done; a bag's failure reaches its result.
    """
    from distributed import LocalCluster
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                        host='127.0.0.1', dashboard_address=None, silence_logs=logging.CRITICAL)


def connect(scheduler: Optional[str], workers: int) -> tuple[Any, Any]:
    """Return ``(client, cluster or None)`` for ``--scheduler``.

    None and ``local``: a local cluster of ``workers`` processes, closed with the client.

    :raises BagError: when the scheduler cannot be reached.
    """
    try:
        import distributed
    except ImportError as err:
        raise BagError(f'a directory of bags runs on Dask, which is not installed ({err}); '
                       'pip install dask distributed') from None
    cluster = None
    try:
        if scheduler in (None, 'local'):
            cluster = local_cluster(workers)
            return distributed.Client(cluster), cluster
        # waits up to dask's distributed.comm.timeouts.connect (30 s by default)
        return distributed.Client(scheduler), None
    except Exception as err:  # noqa: BLE001 -- OSError, timeouts, bad address: one line
        if cluster is not None:
            cluster.close()
        where = 'a local Dask cluster' if cluster is not None or scheduler in (None, 'local') \
            else f'the Dask scheduler {scheduler}'
        raise BagError(f'cannot reach {where}: {type(err).__name__}: {err}') from None


def analyze_directory(root: Path, config: Any, out_dir: Path, options: Any, *,
                      scheduler: Optional[str] = None, jobs: Optional[int] = None,
                      show_progress: bool = False, config_name: str = '',
                      client: Any = None) -> list[BagResult]:
    """Analyse every bag under ``root`` into ``out_dir/<relative path>``.

    Also write ``out_dir/index.parquet`` (:mod:`.index`).

    :param config: ``AnalyzerConfig``, already validated.
    :param scheduler: Dask scheduler address, ``local`` or None (see :func:`connect`).
    :param jobs: worker processes of a local cluster (default: usable cores).
    :param client: an existing ``distributed.Client`` to use instead.
    :returns: one :class:`BagResult` per bag, in path order.
    """
    root = Path(root).resolve()
    bags = find_bags(root)
    if not bags:
        raise BagError(f'{root} is neither a bag (no metadata.yaml) nor a directory of bags')
    out_dir = Path(out_dir).resolve()
    options = dataclasses.replace(options, progress=False)  # bars from workers would mix
    jobs = max(1, min(jobs or usable_cores(), len(bags)))
    own = client is None
    cluster = None
    if own:
        client, cluster = connect(scheduler, jobs)
    try:
        results = _run(client, bags, root, out_dir, config, options, config_name,
                       Progress(len(bags), 'bags', enabled=show_progress, unit='bags',
                                interval=0.0))
    finally:
        if own:
            client.close()
            if cluster is not None:
                cluster.close()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_index(out_dir / 'index.parquet', results)
    except OSError as err:
        raise BagError(f'cannot write {out_dir / "index.parquet"}: {err}') from None
    return results


def _run(client: Any, bags: list[Path], root: Path, out_dir: Path, config: Any,
         options: Any, config_name: str, progress: Progress) -> list[BagResult]:
    from distributed import as_completed
    outs = {str(b): str(out_dir / b.relative_to(root)) for b in bags}
    run = uuid.uuid4().hex[:12]  # task keys unique on a cluster shared by several runs
    futures = {client.submit(analyze_one, str(b), outs[str(b)], config, options,
                             config_name, key=f'analyze-bag-{run}-{i}-{b.name}'): str(b)
               for i, b in enumerate(bags)}
    results: dict[str, BagResult] = {}
    try:
        for future in as_completed(futures):
            bag = futures[future]
            results[bag] = _result(future, bag, outs[bag])
            progress.update(1)
    finally:
        progress.close()
    return [results[str(b)] for b in bags]


def _result(future: Any, bag: str, out: str) -> BagResult:
    """Return the task's result, or a row naming why the task itself failed (worker died...)."""
    if future.status == 'finished':
        return future.result()
    try:
        err = future.exception()
    except Exception as exc:  # noqa: BLE001 -- e.g. cancelled: still one row
        err = exc
    return BagResult(bag, out, error=f'task failed: {type(err).__name__}: {err}')
