from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"

    def ready(self) -> None:
        from core.graphstore.sql import SqlGraphStore
        from memories import mirror, signals  # noqa: F401 - signals connects the mirror receivers
        from memories.models import Relation

        mirror.register()
        SqlGraphStore.read_relations_from(Relation)
