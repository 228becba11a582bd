from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"

    def ready(self) -> None:
        from memories import signals  # noqa: F401 - connects the mirror receivers
