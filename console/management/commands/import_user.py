from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from console.portability import PortabilityError, import_archive


class Command(BaseCommand):
    help = (
        "Load an archive written by export_user, then mirror its vectors (stop `make run` first on embedded)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--as", dest="as_username", help="the user to load it as (created when missing)")

    def handle(self, *args, path: Path, as_username: str | None = None, **options):
        try:
            imported = import_archive(path, as_username=as_username)
        except PortabilityError as exc:
            raise CommandError(str(exc)) from None
        summary = ", ".join(f"{n} {label.split('.')[-1]}" for label, n in imported.counts.items())
        self.stdout.write(f"Imported {path} as {imported.username}: {summary or 'no data'}")
