from django.conf import settings
from django.core.management.base import BaseCommand

from console.demo import ensure_demo_user, load_demo_data


class Command(BaseCommand):
    help = "Create the demo login (MNEMO_DEMO_USERNAME/MNEMO_DEMO_PASSWORD) and load demo data into an empty instance."

    def add_arguments(self, parser):
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000",
            help="where the server will listen (make run passes HOST:PORT)",
        )

    def handle(self, *args, **options):
        url = options["url"]
        username = settings.MNEMO_DEMO_USERNAME
        user, generated = ensure_demo_user(username, settings.MNEMO_DEMO_PASSWORD or None)
        if load_demo_data(user):
            self.stdout.write("Loaded the demo data (张三/李四/王五 memories, three knowledge texts).")
        if generated:
            self.stdout.write(f"Log in at {url} as {username} / {generated}")
            self.stdout.write(
                f"(shown once; also saved to {settings.DATA_DIR / 'demo-login.txt'}, readable only by you)"
            )
        else:
            self.stdout.write(
                f"Log in at {url} as {username}; the password is MNEMO_DEMO_PASSWORD or is in "
                f"{settings.DATA_DIR / 'demo-login.txt'}"
            )
