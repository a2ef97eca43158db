"""``index.parquet`` of a directory run: one row per bag, and the printed table.

Each row has a ``status``: ``done`` (its output directory is committed; ``complete`` says
whether it holds everything), ``failed`` (``error`` says why; nothing of it is written) or
``not_done`` (the run was interrupted first). The file's metadata (key ``wrench_distribution``,
JSON) counts the bags per status.
"""
from __future__ import annotations

from dataclasses import dataclass
import json
from pathlib import Path
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class BagResult:
    """Outcome of one bag: its summary, or the error that stopped it, and its status."""

    bag: str
    out: str
    summary: Optional[dict] = None
    error: Optional[str] = None
    #: ``done``, ``failed`` or ``not_done`` (default: from ``error``)
    status: Optional[str] = None

    def __post_init__(self) -> None:
        if self.status is None:
            self.status = 'failed' if self.error else 'done'


#: summary.json 'dropped' entry -> index column
DROPS = (('unreadable_messages', 'dropped.unreadable'),
         ('corrupt_messages', 'dropped.corrupt'),
         ('other_publisher_messages', 'dropped.other_publisher'),
         ('unsynchronised_messages', 'dropped.unsynchronised'),
         ('stale_messages', 'dropped.stale'),
         ('rejected_nan_messages', 'dropped.rejected_nan'),
         ('future_messages', 'dropped.future'),
         ('wrong_frame_messages', 'dropped.wrong_frame'),
         ('out_of_order_samples', 'dropped.out_of_order'),
         ('samples_without_contact_pose', 'dropped.no_contact_pose'),
         ('samples_without_orientation', 'dropped.no_orientation'))
LAMBDA_MAX = 'internal_load_max_abs.'


def _fixed_fields() -> list[pa.Field]:
    def f(name, type_, unit=None):
        return pa.field(name, type_, metadata={'unit': unit} if unit else None)
    return ([f('bag', pa.string()), f('out', pa.string()), f('status', pa.string()),
             f('storage', pa.string()), f('samples', pa.int64()), f('start', pa.float64(), 's'),
             f('duration', pa.float64(), 's')]
            + [f(col, pa.int64()) for _, col in DROPS]
            + [f('stamps_going_backwards', pa.int64())]
            + [f('max_resultant_residual', pa.float64(), 'N, N*m'),
               f('internal_load_norm_max', pa.float64(), 'N'),
               f('regimes', pa.list_(pa.string())), f('complete', pa.bool_()),
               f('read_whole', pa.bool_()), f('missing_messages', pa.int64()),
               f('problems', pa.list_(pa.string())),
               f('error', pa.string())])


def _basis(results: Sequence[BagResult]) -> dict[str, str]:
    """Basis element -> unit over every bag, in order of first appearance."""
    out: dict[str, str] = {}
    for r in results:
        for name, stats in (r.summary or {}).get('internal_load', {}).items():
            out.setdefault(name, stats.get('unit', ''))
    return out


def index_row(r: BagResult) -> dict:
    """Return the index row of one bag (None where a failed bag has no value)."""
    row: dict = {'bag': r.bag, 'out': r.out, 'status': r.status, 'error': r.error}
    s = r.summary
    if s is None:
        return row
    row.update(storage=s['storage'], samples=s['samples'], start=s['time_span']['start'],
               duration=s['time_span']['duration'],
               max_resultant_residual=s['max_resultant_residual'],
               internal_load_norm_max=s['internal_load_norm'].get('max'),
               regimes=sorted({g['name'] for g in s['regimes']}))
    row.update({col: s['dropped'].get(key) for key, col in DROPS})
    done = s.get('completeness') or {}
    row.update(complete=s.get('complete'), read_whole=done.get('complete'),
               missing_messages=done.get('missing_messages'), problems=done.get('problems'),
               stamps_going_backwards=s.get('stamps_going_backwards'))
    row.update({LAMBDA_MAX + name: st.get('max_abs')
                for name, st in s['internal_load'].items()})
    return row


def index_table(results: Sequence[BagResult]) -> pa.Table:
    """Return the index table, one row per bag.

    Columns: path, duration, samples, drops per cause, largest |internal load| per basis element
    and of its norm, regimes seen, completeness (complete, messages missing, problems), error.
    """
    basis = _basis(results)
    fields = _fixed_fields()
    at = [f.name for f in fields].index('internal_load_norm_max')
    fields[at:at] = [pa.field(LAMBDA_MAX + b, pa.float64(), metadata={'unit': u})
                     for b, u in basis.items()]
    statuses = [r.status for r in results]
    counts = {s: statuses.count(s) for s in ('done', 'failed', 'not_done')}
    sch = pa.schema(fields, metadata={b'wrench_distribution': json.dumps(
        dict(bags=len(results), **counts)).encode()})
    return pa.Table.from_pylist([index_row(r) for r in results], schema=sch)


def write_index(path: Path, results: Sequence[BagResult]) -> Path:
    """Write ``index.parquet`` (at ``path``; the caller makes it atomic)."""
    pq.write_table(index_table(results), path)
    return Path(path)


def _num(x: Optional[float], fmt: str = '.6g') -> str:
    return '-' if x is None else format(x, fmt)


def format_index(results: Sequence[BagResult]) -> str:
    """Return the printed table: one line per bag, or its error."""
    width = max([len(r.bag) for r in results] + [3])
    lines = [f"{'bag':<{width}}  {'samples':>9} {'span [s]':>10} {'dropped':>8} "
             f"{'max resid':>10} {'|lambda| max':>12}  regimes"]
    for r in results:
        if r.error:
            lines.append(f'{r.bag:<{width}}  error: {r.error}')
            continue
        if r.status == 'not_done':
            lines.append(f'{r.bag:<{width}}  not done (interrupted)')
            continue
        row = index_row(r)
        dropped = sum(row[col] for _, col in DROPS)
        lines.append(f"{r.bag:<{width}}  {row['samples']:>9} {row['duration']:>10.3f} "
                     f"{dropped:>8} {_num(row['max_resultant_residual'], '.3g'):>10} "
                     f"{_num(row['internal_load_norm_max']):>12}  {','.join(row['regimes'])}"
                     + ('' if row.get('complete') in (True, None) else
                        '  INCOMPLETE: ' + '; '.join((r.summary or {}).get('incomplete_because',
                                                                           [])[:2])))
    return '\n'.join(lines)
