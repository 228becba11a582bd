from django.core.management.base import BaseCommand, CommandError

from core.health import run_checks


class Command(BaseCommand):
    help = "Report which backend serves each concern and whether it answers (the Health page, in a terminal)."

    def handle(self, *args, **options):
        checks = run_checks()
        for check in checks:
            mark = "ok " if check.ok else "ERR"
            self.stdout.write(f"{mark} {check.concern:<10} {check.backend:<24} {check.detail}")
        failed = [check.concern for check in checks if not check.ok]
        if failed:
            raise CommandError(f"unreachable: {', '.join(failed)}")
