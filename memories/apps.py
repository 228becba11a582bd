from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"

    def ready(self) -> None:
        from core.graphstore.sql import SqlGraphStore
        from memories import mirror, signals  # noqa: F401 - signals connects the mirror receivers
        from memories.graph.service import register_mirror
        from memories.models import Relation

        mirror.register()
        register_mirror()
        SqlGraphStore.read_relations_from(Relation)
