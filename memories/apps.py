from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"

    def ready(self) -> None:
        from core.graphstore.sql import SqlGraphStore
        from memories import signals  # noqa: F401 - connects the mirror receivers
        from memories.models import Relation

        SqlGraphStore.read_relations_from(Relation)
