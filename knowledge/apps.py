from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self) -> None:
        from knowledge import signals  # noqa: F401 - connects the chunk mirror receiver
