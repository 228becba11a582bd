import argparse

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from console import metrics
from console.evaluation import EvaluationError, evaluation_run
from console.models import RunScope

COLUMNS = ("hit@1", "hit@3", "hit@10", "MRR", "no-ans→∅")


def share(value: str) -> float:
    number = float(value)
    if not 0 <= number <= 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return number


def figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


class Command(BaseCommand):
    help = (
        "Run a user's golden questions against the current search, store the run (it shows on the Evaluation "
        "page) and print its metrics. Exits 1 when --min-hit1 or --min-mrr is not met: a retrieval gate for CI."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--target", choices=RunScope.values, default=RunScope.ALL, help="which questions")
        parser.add_argument("--min-hit1", type=share, help="fail when overall hit@1 is below this (0..1)")
        parser.add_argument("--min-mrr", type=share, help="fail when overall MRR is below this (0..1)")

    def handle(
        self, *args, username: str, target: str, min_hit1: float | None, min_mrr: float | None, **options
    ):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        try:
            run = evaluation_run(user=user, scope=target)
        except EvaluationError as exc:
            raise CommandError(f"No run: {exc}") from None
        previous = run.previous()
        self._print_table(run.summary, previous.summary if previous else {})
        skipped = f", {run.skipped_count} skipped (need answers)" if run.skipped_count else ""
        compared = f"; changes against run #{previous.pk}" if previous else ""
        self.stdout.write(
            f"Run #{run.pk}: {run.question_count} questions{skipped}, {run.duration_ms} ms{compared}. "
            f"Embeddings: {run.settings.get('embedding')}."
        )
        overall = run.summary["overall"]
        failures = [
            f"{label} {figure(overall[metric])} is below {option} {minimum:.3f}"
            for label, metric, option, minimum in (
                ("hit@1", "hit_at_1", "--min-hit1", min_hit1),
                ("MRR", "mrr", "--min-mrr", min_mrr),
            )
            if minimum is not None and (overall[metric] is None or overall[metric] < minimum)
        ]
        if failures:
            raise CommandError("Retrieval below threshold: " + "; ".join(failures) + ".")
        gated = min_hit1 is not None or min_mrr is not None
        self.stdout.write(self.style.SUCCESS("Retrieval meets the thresholds." if gated else "Stored."))

    def _print_table(self, summary: dict, before: dict) -> None:
        rows = [("overall", summary["overall"], before.get("overall"))]
        for key, prefix in (("by_target", "target"), ("by_signal", "signal"), ("by_type", "type")):
            parts = summary.get(key, {})
            if key == "by_target" and len(parts) < 2:
                continue  # one target: the same figures as overall
            for name, part in parts.items():
                rows.append((f"{prefix} {name}", part, before.get(key, {}).get(name)))
        width = max(len(label) for label, _, _ in rows) + 2
        self.stdout.write("".ljust(width) + "   n " + "".join(column.rjust(16) for column in COLUMNS))
        for label, part, earlier in rows:
            changes = metrics.deltas(part, earlier)
            cells = []
            for metric in metrics.METRICS:
                change = changes[metric]
                delta = f" ({change:+.3f})" if change else ""
                cells.append(f"{figure(part[metric])}{delta}".rjust(16))
            self.stdout.write(label.ljust(width) + str(part["answerable"]).rjust(4) + " " + "".join(cells))
