from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self) -> None:
        from knowledge import mirror, signals  # noqa: F401 - signals connects the chunk mirror receiver

        mirror.register()
