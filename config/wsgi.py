import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from core.dispatch import start_background_work  # noqa: E402 - needs the app loaded

start_background_work()
