from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"

    def ready(self) -> None:
        from memories import mirror, signals  # noqa: F401 - signals connects the mirror receivers

        mirror.register()
