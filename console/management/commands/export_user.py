from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from console.portability import export_user


class Command(BaseCommand):
    help = "Write one user's memories, sessions, graph, documents and evaluation as one archive (see import_user)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("path", type=Path, help="the .zip to write")

    def handle(self, *args, username: str, path: Path, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        counts = export_user(user, path)
        summary = ", ".join(f"{n} {label.split('.')[-1]}" for label, n in counts.items() if n)
        self.stdout.write(f"Wrote {path}: {summary or 'no data'}")
