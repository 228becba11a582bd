from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from console.secret_scan import KINDS, ScanReport, scan_secrets


class Command(BaseCommand):
    help = (
        "Find secrets (API keys, tokens, passwords, private keys) already stored in memories (text and metadata), "
        "their edit history, documents (titles and text), chunks, chat messages and the search log, and mask "
        "each whole, as new text is masked. Memories change through the edit service (history kept, mirrors "
        "rewritten); a user whose privacy settings keep secrets is only reported. --dry-run changes nothing. "
        "On the embedded default, stop `make run` first (or run `resync_mirrors` after) so the vector store "
        "can take the re-embedded memories and chunks."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", help="scan this user only (default: every user)")
        parser.add_argument(
            "--dry-run", action="store_true", help="count what would be masked, change nothing"
        )

    def handle(self, *args, user: str | None = None, dry_run: bool = False, **options):
        users = get_user_model().objects.order_by("pk")
        if user is not None:
            users = users.filter(username=user)
            if not users.exists():
                raise CommandError(f"no user named {user!r}")
        report = scan_secrets(users=list(users), dry_run=dry_run)
        self.stdout.write(render(report))


def render(report: ScanReport) -> str:
    """The report as a plain-text table: secrets per place and kind."""
    rows = report.rows()
    totals = [sum(numbers[i] for _, numbers, _ in rows) for i in range(len(KINDS))]
    table = [["where", *KINDS, "all"]]
    table += [[place, *map(str, numbers), str(total)] for place, numbers, total in rows]
    table.append(["total", *map(str, totals), str(report.total)])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = [
        "  ".join([row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))])
        for row in table
    ]
    verb = "would be masked (dry run: nothing changed)" if report.dry_run else "masked"
    lines.append(f"{report.total} secret(s) in the data of {report.users} user(s) {verb}.")
    if report.skipped:
        lines.append(
            f"Not changed, as their privacy settings keep secrets: {', '.join(report.skipped)} "
            "(their secrets are counted above)."
        )
    if report.not_changed:
        lines.append(f"{report.not_changed} memory(ies) could not be changed (the log names them).")
    return "\n".join(lines)
