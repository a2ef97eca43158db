"""Directory mode: every bag under a directory, one Dask task per bag.

The same code path serves every scheduler: :func:`analyze_directory` submits
:func:`analyze_one` once per bag to a ``distributed.Client`` and collects the
results as they finish. The client connects to an existing cluster
(``--scheduler tcp://host:8786``) or to a local cluster of worker processes that it
starts on the loopback interface (``--scheduler local``, and the default, with
``--jobs`` workers). A bag that fails, or whose worker dies, gives a row with its
error; it never stops the others.

Each bag's output directory is committed whole by its task (:mod:`.outputs`); the index is
written last, atomically, even when bags failed, and on Ctrl-C, with each bag marked
``done``, ``failed`` or ``not_done`` (``status``). With ``--resume``, a bag whose committed
output matches it (by identity) and the settings is not analysed again; its row comes from
its ``summary.json``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any, Optional
import uuid

from . import outputs
from .errors import BagError, IncompleteBag
from .index import BagResult, write_index
from .progress import Progress
from .shell import children_ignore_interrupts, held_interrupts, Interrupted


@dataclasses.dataclass
class DirectoryRun:
    """What a directory run gives: one row per bag, and why the index was not written."""

    results: list
    index_error: Optional[str] = None


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
                        host='127.0.0.1', dashboard_address='127.0.0.1:0',
                        scheduler_kwargs={'dashboard': False}, silence_logs=logging.CRITICAL)


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
            # multiprocessing's resource tracker unblocks Ctrl-C in the thread that starts it:
            # started here, before the workers, it leaves the hold below alone
            from multiprocessing import resource_tracker
            resource_tracker.ensure_running()
            with children_ignore_interrupts():  # the command stops them (module shell)
                cluster = local_cluster(workers)
            return distributed.Client(cluster), cluster
        # waits up to dask's distributed.comm.timeouts.connect (30 s by default)
        return distributed.Client(scheduler), None
    except KeyboardInterrupt:
        if cluster is not None:
            cluster.close()
        raise
    except Exception as err:  # noqa: BLE001 -- OSError, timeouts, bad address: one line
        if cluster is not None:
            cluster.close()
        where = 'a local Dask cluster' if cluster is not None or scheduler in (None, 'local') \
            else f'the Dask scheduler {scheduler}'
        raise BagError(f'cannot reach {where}: {type(err).__name__}: {err}') from None


def analyze_directory(root: Path, config: Any, out_dir: Path, options: Any, *,
                      scheduler: Optional[str] = None, jobs: Optional[int] = None,
                      show_progress: bool = False, config_name: str = '',
                      client: Any = None) -> DirectoryRun:
    """Analyse every bag under ``root`` into ``out_dir/<relative path>``.

    Also write ``out_dir/index.parquet`` (:mod:`.index`), atomically, whatever happened.

    :param config: ``AnalyzerConfig``, already validated.
    :param options: the analysis options; ``existing`` applies to ``out_dir`` as a whole.
    :param scheduler: Dask scheduler address, ``local`` or None (see :func:`connect`).
    :param jobs: worker processes of a local cluster (default: usable cores).
    :param client: an existing ``distributed.Client`` to use instead.
    :returns: one :class:`BagResult` per bag, in path order, and the index's error if any.
    :raises Interrupted: on Ctrl-C, once the index marks what was done.
    :raises BagError: when ``out_dir`` is refused or the scheduler cannot be reached.
    """
    root = Path(root).resolve()
    bags = find_bags(root)
    if not bags:
        raise BagError(f'{root} is neither a bag (no metadata.yaml) nor a directory of bags')
    out_dir = Path(out_dir).resolve()
    prepare_output(out_dir, options.existing)
    outs = {b: out_dir / b.relative_to(root) for b in bags}
    options = dataclasses.replace(  # no bars from workers; out_dir was emptied unless resumed
        options, progress=False, existing='resume' if options.existing == 'resume' else 'replace')
    results: dict = {}
    interrupted = False
    try:
        keep_results(bags, outs, config, options, config_name, results)
        todo = [b for b in bags if b not in results]
        if todo:
            _on_cluster(client, scheduler, jobs, todo, outs, config, options, config_name,
                        Progress(len(todo), 'bags', enabled=show_progress, unit='bags',
                                 interval=0.0), results)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        outputs.sweep(out_dir, recursive=True)  # what tasks stopped with the cluster left
    rows = [results.get(b) or BagResult(str(b), str(outs[b]), status='not_done') for b in bags]
    index_error = _write_index(out_dir, rows)
    if interrupted:
        done = sum(r.status == 'done' for r in rows)
        raise Interrupted(f'{done} of {len(rows)} bags done; '
                          + (index_error or f'{out_dir / "index.parquet"} marks each bag done, '
                             'failed or not_done') + '; rerun with --resume to finish')
    return DirectoryRun(rows, index_error)


def prepare_output(out_dir: Path, policy: str) -> None:
    """Make ``out_dir`` ready for a directory run, as ``policy`` says (:mod:`.outputs`).

    ``replace`` removes every file of the old run first; ``resume`` keeps the bags' committed
    outputs and removes the old index (a new one comes at the end).

    :raises BagError: a directory refused, or one that cannot be made or emptied.
    """
    try:
        held = outputs.check_target(out_dir, policy)
        if held and policy == 'replace':
            outputs.remove_contents(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        outputs.sweep(out_dir.parent)  # a run killed while it emptied out_dir renamed it aside
        outputs.sweep(out_dir, recursive=True)
        with contextlib.suppress(FileNotFoundError):
            (out_dir / 'index.parquet').unlink()
    except OSError as err:
        raise BagError(f'cannot prepare the output directory {out_dir}: {err}') from None


def keep_results(bags: list, outs: dict, config: Any, options: Any, config_name: str,
                 kept: dict) -> None:
    """Put in ``kept`` the :class:`BagResult` of each bag whose committed output is kept.

    Only with ``resume``: a bag whose output is the committed one of the same bag and settings.
    """
    from .pipeline import kept_summary, run_settings
    if options.existing != 'resume':
        return
    for bag in bags:
        try:
            identity = (outputs.bag_identity(bag), outputs.settings_identity(
                run_settings(bag, config, options, config_name)))
        except BagError:
            continue  # its task says what is wrong
        summary = kept_summary(outs[bag], identity, options)
        if summary is not None:
            kept[bag] = BagResult(str(bag), str(outs[bag]), summary=summary)


def _on_cluster(client: Any, scheduler: Optional[str], jobs: Optional[int], bags: list,
                outs: dict, config: Any, options: Any, config_name: str, progress: Progress,
                results: dict) -> None:
    """Run one task per bag on the cluster, filling ``results`` as they finish."""
    jobs = max(1, min(jobs or usable_cores(), len(bags)))
    own = client is None
    cluster = None
    if own:
        client, cluster = connect(scheduler, jobs)
    try:
        _run(client, bags, outs, config, options, config_name, progress, results)
    finally:
        if own:
            with held_interrupts():  # a Ctrl-C now comes once the cluster is closed
                client.close()
                if cluster is not None:
                    cluster.close()


def _write_index(out_dir: Path, rows: list) -> Optional[str]:
    """Write ``index.parquet`` atomically; return why it could not be written, or None."""
    try:
        outputs.write_atomic(out_dir / 'index.parquet', lambda path: write_index(path, rows))
    except OSError as err:
        return f'cannot write {out_dir / "index.parquet"}: {err}'
    return None


def _run(client: Any, bags: list, outs: dict, config: Any, options: Any, config_name: str,
         progress: Progress, results: dict) -> None:
    """Submit one task per bag and put each result in ``results`` as it comes.

    On Ctrl-C the tasks not finished are cancelled (their rows say ``not_done``).
    """
    from distributed import as_completed
    run = uuid.uuid4().hex[:12]  # task keys unique on a cluster shared by several runs
    futures = {client.submit(analyze_one, str(b), str(outs[b]), config, options,
                             config_name, key=f'analyze-bag-{run}-{i}-{b.name}'): b
               for i, b in enumerate(bags)}
    try:
        for future in as_completed(futures):
            bag = futures[future]
            results[bag] = _result(future, str(bag), str(outs[bag]))
            progress.update(1)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            client.cancel([f for f in futures if f.status != 'finished'])
        raise
    finally:
        progress.close()


def _result(future: Any, bag: str, out: str) -> BagResult:
    """Return the task's result, or a row naming why the task itself failed (worker died...)."""
    if future.status == 'finished':
        return future.result()
    try:
        err = future.exception()
    except Exception as exc:  # noqa: BLE001 -- e.g. cancelled: still one row
        err = exc
    return BagResult(bag, out, error=f'task failed: {type(err).__name__}: {err}')
