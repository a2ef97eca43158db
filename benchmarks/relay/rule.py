"""The relay benchmark's acceptance rule: which executor kinds and loop layouts meet it."""


def choose(rows: list, startup: list, reference: str, limit: float = 1.2) -> list:
    """Executor kinds and loop layouts that meet the rule, in the order measured.

    The rule (the distributor must hold what the bare relay holds, at no more than 1.2x its
    latency in the same run: docs/benchmarks.md): at every rate the judged rows lost no more cycles than the
    reference relay at that rate, their p50 and p99 are at most ``limit`` times the
    relay's and, with feedback, their loop was closed when the window opened; and no
    start-up trial missed a message (the ``transient_local`` trials where there are any:
    there only the executor can miss; none run with ``--startup-trials 0``). The judged rows
    are the whole loop's, each layout (``processes``, ``one-process``) on its own rows; the
    distributor alone is judged when no loop ran, and reported beside it otherwise.

    :param rows: latency rows (with ``kind``, ``rate``, ``is_distributor``, ``layout``, ratios).
    :param startup: start-up rows.
    :param reference: the reference relay's kind.
    :param limit: ratio limit.
    :return: the kinds meeting the rule, each with its layout when the loop ran in several,
        e.g. ``events (processes)``.
    """
    relay_lost = {r.get('rate'): r['lost'] for r in rows
                  if not r['is_distributor'] and r['kind'] == reference and not r.get('moving')}
    ok = []
    for kind in dict.fromkeys([r['kind'] for r in rows if r['is_distributor']]
                              + [st['kind'] for st in startup]):
        trials = [st for st in startup if st['kind'] == kind]
        trials = [st for st in trials if st['durability'] == 'transient_local'] or trials
        if not all(st['missed'] == 0 and st['unmatched'] == 0 for st in trials):
            continue
        mine = [r for r in rows if r['is_distributor'] and r['kind'] == kind]
        layouts = list(dict.fromkeys(r.get('layout') for r in mine if r.get('layout')))
        for layout in layouts or [None]:
            judged = [r for r in mine if r.get('layout') == layout]
            if judged and all(r['lost'] <= relay_lost.get(r.get('rate'), 0)
                              and r['p50_ratio'] <= limit and r['p99_ratio'] <= limit
                              and r.get('loop_closed', True) for r in judged):
                ok.append(kind if len(layouts) < 2 else f'{kind} ({layout})')
    return ok
