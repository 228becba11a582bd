from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memories import cleaning


class Command(BaseCommand):
    help = (
        "Find duplicate and outdated memories of a user and queue merge/supersede proposals for review on the "
        "Review page (nothing changes until they are approved); --dry-run prints the same proposals only."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--dry-run", action="store_true", help="print the proposals, queue nothing")

    def handle(self, *args, username: str, dry_run: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        drafts = cleaning.propose(user)
        for draft in drafts:
            verb = "merge into" if draft.action == "merge" else "superseded by"
            self.stdout.write(
                f"{draft.action}: “{draft.memory.content[:80]}” {verb} “{draft.target.content[:80]}”"
            )
            self.stdout.write(f"    why: {draft.reason}")
        if dry_run:
            self.stdout.write(f"{len(drafts)} proposal(s); dry run: nothing queued.")
            return
        queued = cleaning.queue(user, drafts)
        self.stdout.write(f"{len(drafts)} proposal(s), {len(queued)} new in the review queue.")
