from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.models import ApiKeyScope
from core.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a user. The key is printed alone on the last line (scripts rely on this)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="command line")
        parser.add_argument("--scope", choices=ApiKeyScope.values, default=ApiKeyScope.WRITE)

    def handle(self, *args, username: str, name: str, scope: str, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}. Create one with `manage.py createsuperuser`.")
        api_key, raw_key = api_key_create(user=user, name=name, scope=scope)
        self.stderr.write(
            f"Created {api_key.scope} key {api_key.name!r} for {username}; it will not be shown again:"
        )
        self.stdout.write(raw_key)
