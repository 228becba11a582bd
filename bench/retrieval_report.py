"""The retrieval report: every set with Mnemo's left-out figures beside each signal alone and the plain sum, the
configuration and the data that chose it, the no-answer curve and what each embedding model adds."""

from __future__ import annotations

import time

import numpy as np
import ranking_choice as rc
from report import load, machine, markdown, revision

ROOT_RESULTS = "bench/results/retrieval.md"
TOLERANCE = 0.01
_BEFORE = load()


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _ci(ci) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def rule_row(es, left_out, baselines) -> tuple[list[str], bool, dict]:
    qs = es.questions
    mnemo = rc.metrics(qs, left_out)
    singles = {name: rc.metrics(qs, o) for name, o in baselines.items() if name != rc.PLAIN}
    plain = rc.metrics(qs, baselines[rc.PLAIN])
    best = max(singles, key=lambda n: singles[n]["hit@1"] or 0)
    best_mrr = max(singles, key=lambda n: singles[n]["mrr"] or 0)
    need = rc.rule_need([*singles.values(), plain])
    passed = all((mnemo[k] or 0) >= need[k] - TOLERANCE for k in need)
    cells = [
        es.name, es.source, es.language, str(mnemo["n"]),
        f"{_fmt(mnemo['hit@1'])} {_ci(rc.interval(qs, left_out, 'hit@1'))}",
        f"{_fmt(mnemo['mrr'])} {_ci(rc.interval(qs, left_out, 'mrr'))}",
        f"{best} {_fmt(singles[best]['hit@1'])} / {_fmt(singles[best_mrr]['mrr'])}",
        f"{_fmt(plain['hit@1'])} / {_fmt(plain['mrr'])}",
        f"{(mnemo['hit@1'] or 0) - need['hit@1']:+.3f} / {(mnemo['mrr'] or 0) - need['mrr']:+.3f}",
        "PASS" if passed else "FAIL",
    ]  # fmt: skip
    return cells, passed, dict(mnemo=mnemo, plain=plain, best=best, best_values=singles[best], need=need)


def set_table(es, rows: dict) -> str:
    if es.kind == "locomo":
        head = ["", "turn R@1", "R@5", "R@10", "all-evidence R@10", "session R@10", "MRR", "questions"]
        keys = ["hit@1", "hit@5", "hit@10", "all@10", "sess@10", "mrr"]
    else:
        head = ["", "hit@1", "hit@3", "hit@10", "MRR", "no-answer empty", "questions"]
        keys = ["hit@1", "hit@3", "hit@10", "mrr", "empty"]
    body = []
    for label, m in rows.items():
        n = f"{m['n']}" + (f" + {m['n_none']} no-answer" if m["n_none"] else "")
        body.append([label] + [_fmt(m.get(k)) for k in keys] + [n])
    return markdown(head, body)


def describe_config(config, base) -> str:
    changed = {k: v for k, v in config.snapshot().items() if base.snapshot().get(k) != v}
    return ", ".join(f"{k}={v}" for k, v in changed.items()) or "the shipped values"


# CPU per search for the query embeddings a set may spend (issue 36: 35 ms per search, of which the graph, SQL,
# fusion and HTTP take about 20): the shipped set is the best by left-out score within it.
EMBEDDING_BUDGET_MS = 15.0


def model_costs() -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent / "results" / "model_costs.json"
    if not path.exists():  # without them every model would look free and the budget would choose nothing
        raise SystemExit(
            f"{path.name} is missing: run bench/model_costs.py first (the model set depends on it)"
        )
    return {row["model"]: row for row in json.loads(path.read_text())}


def query_cpu(models, costs) -> tuple[float, float]:
    """CPU ms of one English and one Chinese query's embeddings: the models that read the query's script."""
    from core import stores
    from core.text import CJK, LATIN

    spaces = stores.embedding_set().spaces
    return tuple(
        sum(costs[m][f"query_ms_{lang}"] for m in models if m in costs and script in spaces[m].reads)
        for script, lang in ((LATIN, "en"), (CJK, "zh"))
    )


def left_out_figures(sets, captured, choice) -> dict:
    """Per set, the outcomes of the configuration chosen with it left out (a test set: chosen on every dev set)."""
    chosen, models = choice["chosen"], choice["models"]
    out = {}
    for es in sets:
        config = chosen.get(es.name, chosen["(all)"])
        out[es.name] = rc.system_outcomes(
            captured[es.name], lambda kind, item, c=config: rc.replay(kind, item, c, models)
        )
    return out


def compare_model_sets(sets, captured, choices, costs) -> tuple[str, str]:
    """A table of every model set: left-out scores, rule passes, CPU; and the set chosen by it."""
    rows, ranked = [], []
    for label, (choice, baselines) in choices.items():
        outcomes = left_out_figures(sets, captured, choice)
        dev = [es for es in sets if es.split == "dev"]
        scores = [rc.metrics(es.questions, outcomes[es.name]) for es in dev]
        hit1 = np.mean([m["hit@1"] or 0 for m in scores])
        mrr = np.mean([m["mrr"] or 0 for m in scores])
        passes = sum(rule_row(es, outcomes[es.name], baselines[es.name])[1] for es in dev)
        en, zh = query_cpu(choice["models"], costs)
        memory = sum(costs[m]["memory_mb"] for m in choice["models"] if m in costs)
        rows.append(
            [
                label,
                f"{hit1:.3f}",
                f"{mrr:.3f}",
                f"{passes} of {len(dev)}",
                f"{en:.1f}",
                f"{zh:.1f}",
                f"{memory:.0f}",
            ]
        )
        ranked.append(((hit1 + mrr) / 2 if max(en, zh) <= EMBEDDING_BUDGET_MS else -1.0, label))
    table = markdown(
        ["model set", "mean left-out hit@1", "mean left-out MRR", "rule passes (dev)", "query CPU ms (en)",
         "query CPU ms (zh)", "memory MB"],
        rows,
    )  # fmt: skip
    return table, max(ranked)[1]


def expired_answers(units) -> int:
    """Answerable questions none of whose answers the search may return (Captured.visible)."""
    count = 0
    for unit in units:
        for item in unit.questions:
            if item.visible is None or not item.question.answerable:
                continue
            answers = [pid for pid, label in unit.labels.items() if label in item.question.answers]
            count += not any(pid in item.visible for pid in answers)
    return count


def report(sets, dev, captured, choices, embedding_set, skipped, started_at, t_start, log) -> dict:
    from core.ranking import CHOSEN_BY, RANKING

    costs = model_costs()
    comparison, shipped_set = compare_model_sets(sets, captured, choices, costs)
    choice, baselines = choices[shipped_set]
    chosen, models = choice["chosen"], choice["models"]
    final = chosen["(all)"]
    left_out = left_out_figures(sets, captured, choice)
    rows, figures, passes = [], {}, 0
    sections = []
    for es in sets:
        config = chosen.get(es.name, final)
        cells, passed, detail = rule_row(es, left_out[es.name], baselines[es.name])
        rows.append(cells)
        passes += passed
        figures[es.name] = detail | {"config": config.snapshot()}
        table_rows = {f"{rc.MNEMO} (left out)": detail["mnemo"]}
        if es.name in chosen:
            shipped = rc.system_outcomes(
                captured[es.name], lambda kind, item: rc.replay(kind, item, final, models)
            )
            table_rows[f"{rc.MNEMO} (final configuration)"] = rc.metrics(es.questions, shipped)
        table_rows[rc.PLAIN] = detail["plain"]
        table_rows |= {
            f"{n} alone": rc.metrics(es.questions, o) for n, o in baselines[es.name].items() if n != rc.PLAIN
        }
        kinds = sorted({q.kind for q in es.questions})
        by_kind = {k: rc.metrics(es.questions, left_out[es.name], k) for k in kinds}
        text = f"### {es.name} ({es.source}, {es.split}, {es.language})\n\nConfiguration: {describe_config(config, RANKING)}.\n\n"
        text += (
            set_table(es, table_rows)
            + f"\n\n{rc.MNEMO} (left out) by question kind:\n\n"
            + set_table(es, by_kind)
            + "\n"
        )
        if es.warnings:
            text += "\nNotes: " + "; ".join(es.warnings[:10]) + (" …" if len(es.warnings) > 10 else "") + "\n"
        sections.append(text)
    rule = markdown(
        "set|source|language|answerable|Mnemo hit@1 [95 % CI]|Mnemo MRR [95 % CI]|best single signal hit@1 / MRR|"
        "plain sum hit@1 / MRR|margin hit@1 / MRR|rule".split("|"),
        rows,
    )
    constants = markdown(
        ["constant", "value", "chosen by"],
        [[k, str(v), CHOSEN_BY.get(k, "")] for k, v in final.snapshot().items()],
    )
    folds = markdown(
        ["left out", "configuration chosen on the others"],
        [[fold, describe_config(config, RANKING)] for fold, config in chosen.items()],
    )
    curve = markdown(
        ["floor (σ)", "noise floors (quantile)", "no-answer questions returning nothing",
         "answerable questions whose answer is cut", "... in the set where most are cut"],
        [[f"{r['floor']:g}" if r["floor"] != rc.NO_FLOOR else "none",
          "none" if r["quantile"] is None else f"{r['quantile']:g}: "
          + ", ".join(f"{k} {v:.3f}" for k, v in r["model_floors"].items()),
          _fmt(r["empty"]), _fmt(r["cut"]),
          f"{_fmt(r['worst_cut'])} ({r['worst_set']})" if r["worst_set"] and r["worst_cut"] else _fmt(r["worst_cut"])]
         for r in choice["curves"]["(all)"]],
    )  # fmt: skip
    ablation = model_ablation(dev, captured, final, models, log)
    gone = {es.name: expired_answers(captured[es.name]) for es in sets}
    gone_text = ", ".join(f"{name} {count}" for name, count in gone.items() if count) or "none"
    minutes = (time.perf_counter() - t_start) / 60
    head = f"""# Retrieval on data nobody on the team wrote: Mnemo's search, left out, beside each signal and the plain sum

Measured {started_at:%Y-%m-%d %H:%M} UTC ({minutes:.0f} min). Machine: {machine()}; load average {_BEFORE} before,
{load()} after. Revision: {revision()}. Embedding models stored: {embedding_set.describe()}.
Sets skipped: {"; ".join(skipped) or "none"}.

{rc.MNEMO} passes the rule on {passes} of {len(sets)} sets.

## The rule, set by set (left out)

{rule}

Models: {shipped_set}, the best of the model sets below by mean left-out score among those whose query
embeddings cost at most {EMBEDDING_BUDGET_MS:g} ms of CPU per search (bench/results/model_costs.md).
Hit@1 and MRR of {rc.MNEMO} are those of the configuration chosen with the set left out (a test set: chosen on
every development set): the one that falls least below the other sets' baselines, summed over the sets and both
measures, then the one with the best mean of hit@1 and MRR over them (bench/ranking_choice.py Grid.choose).
The interval is a bootstrap over the set's questions ({rc.BOOTSTRAP} resamples). The best single signal is
the best of each signal alone on the set (possibly different ones for hit@1 and MRR).
Every system ranks the texts the search may return: for memories the current, unexpired ones. Answerable
questions whose every answer is a memory no search returns any more (a working memory past its TTL), counted as
misses for {rc.MNEMO}, each signal and the plain sum alike: {gone_text}.

## The configuration

Shipped (chosen on every development set): {describe_config(final, RANKING)}.

{constants}

Chosen with each set left out:

{folds}

## No answer: the floor

Over every development set with the final configuration's fusion: the floor in σ and the models' noise floors
(each the given quantile of the model's best cosine for the questions whose answer is not stored). Every point
without a floor in σ that cuts the answer of at most 1 % of the answerable questions of every set (the rule's own
tolerance, which holds set by set: a floor that costs a set more makes Mnemo lose there to a signal that has none)
is a candidate; the one that empties the
most no-answer questions is chosen. A floor in σ is shown, never chosen: a z-score is relative to the query's
candidates, and the best of n stands at most sqrt(n - 1) σ above them, so in a store of a few memories it would
cut the answer itself (bench/retrieval_eval.py, FLOORS):

{curve}

## The embedding models

Every model set, its numbers chosen with each set left out (the rule's baselines are each set's own signals):

{comparison}

What each model of the chosen set adds:

{ablation}

## Set by set

"""
    text = head + "\n".join(sections)
    return dict(markdown=text, json=dict(figures=figures, passes=passes, models=shipped_set), final=final)


def model_ablation(dev, captured, config, models, log) -> str:
    """Each model left out of the final configuration: the change in hit@1 on every development set."""
    names = list(models)
    full = {
        es.name: rc.metrics(
            es.questions, rc.system_outcomes(captured[es.name], lambda k, i: rc.replay(k, i, config, names))
        )
        for es in dev
    }
    rows = []
    for name in names:
        keep = [n for n in names if n != name]
        deltas = []
        for es in dev:
            outcomes = rc.system_outcomes(
                captured[es.name], lambda k, i, keep=keep: rc.replay(k, i, config, keep)
            )
            deltas.append((rc.metrics(es.questions, outcomes)["hit@1"] or 0) - (full[es.name]["hit@1"] or 0))
        log(f"  without {name}")
        rows.append(
            [name, f"{-np.mean(deltas):+.3f}", f"{-min(deltas):+.3f}"] + [f"{-d:+.3f}" for d in deltas]
        )
    head = ["model", "hit@1 it adds, mean over sets", "largest gain on one set"] + [es.name for es in dev]
    return (
        markdown(head, rows)
        + "\n\n(hit@1 with every model minus hit@1 without this one, on the final configuration.)"
    )


def write_report(results: dict, command: str) -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parent / "results" / "retrieval.md"
    text = results["markdown"]
    check = results.get("product_check")
    if check:
        text += (
            f"\n## The replay is the product\n\n{check['checked']} questions searched through the product's own "
            f"search with the final configuration; {check['differ']} returned another list than the replay"
            + (f" ({', '.join(check['examples'])})" if check["examples"] else "")
            + ".\n"
        )
    text += f"\nCommand: `{command}`\n"
    path.write_text(text)
    print(f"Wrote {path}")
