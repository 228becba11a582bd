import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from console.portability import PortabilityError, import_archive


class Command(BaseCommand):
    help = (
        "Load an archive written by export_user, then mirror its vectors (stop `make run` first on embedded). "
        "A database without Mnemo's tables (a fresh MNEMO_DATA_DIR) is migrated first."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", type=Path)
        parser.add_argument("--as", dest="as_username", help="the user to load it as (created when missing)")
        parser.add_argument(
            "--password-from-env",
            metavar="VARIABLE",
            help="give the user the password held in this environment variable (so it never shows in `ps`)",
        )

    def handle(self, *args, path: Path, as_username=None, password_from_env=None, **options):
        password = self._password(password_from_env)
        self._migrate()
        try:
            imported = import_archive(path, as_username=as_username)
        except PortabilityError as exc:
            raise CommandError(f"{path} was not imported: {exc}") from None
        summary = ", ".join(f"{n} {label.split('.')[-1]}" for label, n in imported.counts.items())
        self.stdout.write(f"Imported {path} as {imported.username}: {summary or 'no data'}")
        merged = ", ".join(f"{n} {label.split('.')[-1]}" for label, n in imported.merged.items())
        if merged:
            self.stdout.write(f"Merged into what {imported.username} already had: {merged}")
        user = get_user_model().objects.get(username=imported.username)
        if password is not None:
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"{imported.username} signs in with the password from {password_from_env}.")
        elif not user.has_usable_password():
            self.stdout.write(
                f"{imported.username} has no password yet: set one with "
                f"`manage.py changepassword {imported.username}` (or import with --password-from-env VARIABLE)."
            )

    def _password(self, variable: str | None) -> str | None:
        if variable is None:
            return None
        password = os.environ.get(variable, "")
        if not password:
            raise CommandError(f"--password-from-env {variable}: that environment variable is empty or unset")
        try:
            validate_password(password)  # the rules a sign-up or `changepassword` applies
        except ValidationError as exc:
            raise CommandError(f"the password in {variable} is refused: {' '.join(exc.messages)}") from None
        return password

    def _migrate(self) -> None:
        """A fresh data folder has an empty database: give it Mnemo's tables, as `make run` would."""
        executor = MigrationExecutor(connection)
        if executor.migration_plan(executor.loader.graph.leaf_nodes()):
            self.stdout.write(f"Applying migrations to {connection.settings_dict['NAME']} first.")
            call_command("migrate", verbosity=0, interactive=False)
