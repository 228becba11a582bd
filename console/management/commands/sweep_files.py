from datetime import timedelta

from django.core.management.base import BaseCommand

from console.files import ORPHAN_GRACE, sweep_orphans


class Command(BaseCommand):
    help = (
        "Delete the uploaded files no memory or document names any more (orphans), once unchanged for a while. "
        "--dry-run lists them and deletes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="list the orphans, delete nothing")
        parser.add_argument(
            "--older-than",
            type=float,
            default=ORPHAN_GRACE.total_seconds() / 3600,
            metavar="HOURS",
            help="leave files changed more recently than this (default %(default)g: an upload in flight, a "
            "delete that may still be undone)",
        )

    def handle(self, *args, dry_run: bool, older_than: float, **options):
        orphans = sweep_orphans(grace=timedelta(hours=max(older_than, 0)), dry_run=dry_run)
        for orphan in orphans:
            self.stdout.write(f"  {orphan.name} ({orphan.size:,} bytes)")
        total = sum(orphan.size for orphan in orphans)
        verb = "would be deleted (dry run)" if dry_run else "deleted"
        self.stdout.write(f"{len(orphans)} orphaned files, {total:,} bytes: {verb}.")
