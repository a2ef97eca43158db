"""The relay benchmark's Markdown tables (``--markdown``), as docs/benchmarks.md records them."""
import numpy as np

from .fanout import PHASE_BINS, STARTUP_MESSAGES


def _cpu_text(cpu: dict) -> str:
    """``name share`` of each process, the target's first, source and sink last."""
    order = [k for k in cpu if k not in ('sink', 'source')] + ['sink', 'source']
    return ', '.join(f'{k} {cpu[k]:.0f}' for k in order if k in cpu) or '-'


def _span(row: dict) -> str:
    if row['lost_first_index'] is None:
        return '-'
    return f"{row['lost_first_index']}..{row['lost_last_index']}"


def _print_phase_table(rows: list, reference: str) -> None:
    """Print the whole loop's median by the desired wrench's phase against the F/T clock."""
    phased = [r for r in rows if 'p50_by_phase_ms' in r]
    if not phased:
        return
    relay_p50 = {r['rate']: r['p50_ms'] for r in rows
                 if not r['is_distributor'] and r['kind'] == reference}
    parts = [f'{100 * k // PHASE_BINS}-{100 * (k + 1) // PHASE_BINS} %' for k in range(PHASE_BINS)]
    print("\nThe whole loop's p50 (ms, and / relay) by how far into the F/T period the desired "
          'wrench was sent:')
    print(f'\n| target | rate (Hz) | relay ({reference}) p50 (ms) | ' + ' | '.join(parts) + ' |')
    print('|---|---|---|' + '---|' * PHASE_BINS)
    for r in phased:
        ref = relay_p50.get(r['rate'], float('nan'))
        cells = ' | '.join('-' if not np.isfinite(v) else f'{v:.2f} ({v / ref:.2f})'
                           for v in r['p50_by_phase_ms'])
        print(f"| {r['target']} | {r['rate']:.0f} | {ref:.2f} | {cells} |")


def _print_traffic_table(rows: list) -> None:
    """Print the moving distributor against the relay of the same messages (``--moving-contacts``)."""
    moving = [r for r in rows if 'p50_ratio_traffic' in r]
    if not moving:
        return
    print('\nThe distributor with new poses and weights every tick against the relay taking and '
          'publishing the same messages:')
    print('\n| target | rate (Hz) | lost cycles (relay of the same messages) | p50 / that relay | '
          'p99 / that relay |')
    print('|---|---|---|---|---|')
    relays = {r['rate']: r for r in rows if r.get('moving') and not r['is_distributor']}
    for r in moving:
        relay = relays.get(r['rate'], {})
        print(f"| {r['target']} | {r['rate']:.0f} | {r['lost']} ({relay.get('lost', '-')}) | "
              f"{r['p50_ratio_traffic']:.2f} | {r['p99_ratio_traffic']:.2f} |")


def print_tables(rows: list, startup: list, reference: str) -> None:
    """Print the Markdown tables of a run: latency rows, phases (the whole loop), start-up trials.

    :param rows: latency rows.
    :param startup: start-up rows.
    :param reference: the reference relay's executor kind (the ratio columns).
    """
    print('\n| target | rate (Hz) | held (Hz) | lost cycles | p50 (ms) | p99 (ms) | '
          f'p50 / relay ({reference}) | p99 / relay ({reference}) | p50 / relay (same) | '
          'p99 / relay (same) | lost indices | load avg | CPU, % of one core |')
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        same = (f"{r['p50_ratio_same']:.2f} | {r['p99_ratio_same']:.2f}"
                if 'p50_ratio_same' in r else '1 | 1')
        if 'p50_ratio_range' in r:  # medians over rounds: show the spread of the ratios
            spread = '; '.join(f'{low:.2f}..{high:.2f}' for low, high in
                               (r['p50_ratio_range'], r['p99_ratio_range']))
            same = f'{same} (rounds {spread})' if r['is_distributor'] else same
        print(f"| {r['target']} | {r['rate']:.0f} | {r['held_hz']:.0f} | "
              f"{r['lost']} / {r['sent']} ({r['lost_pct']:.1f} %) | {r['p50_ms']:.2f} | "
              f"{r['p99_ms']:.2f} | {r['p50_ratio']:.2f} | {r['p99_ratio']:.2f} | {same} | "
              f"{_span(r)} | {r['load1']} | {_cpu_text(r.get('cpu') or {})} |")
    _print_traffic_table(rows)
    _print_phase_table(rows, reference)
    if startup:
        print(f'\n| executor | durability | trials | missed (any of {STARTUP_MESSAGES}) | '
              'missed the first | received none | never matched |')
        print('|---|---|---|---|---|---|---|')
        for st in startup:
            print(f"| {st['kind']} | {st['durability']} | {st['trials']} | {st['missed']} | "
                  f"{st['missed_first']} | {st['none']} | {st['unmatched']} |")
