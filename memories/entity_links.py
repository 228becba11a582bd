"""Linking a memory to the entities it names (memories.entities finds them) and recording their relations: the
entity graph grows from these links, one user's at a time.
"""

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Value
from django.db.models.functions import StrIndex

from memories.entities import Extraction, Mention, ModelMentions, entity_key, extract
from memories.models import Entity, Memory, MemoryEntity, Relation

MAX_ENTITIES_PER_MEMORY = 12


@transaction.atomic
def link_entities(
    memory: Memory, extraction: Extraction | None = None, mentions: ModelMentions | None = None
) -> list[Entity]:
    """(Re)link a memory to the entities it names, merged per user by key, and record their relations:
    co-occurrence for every pair, plus typed relations the extractor found (patterns or the LLM)."""
    # A worker's LLM extraction relinks a memory after the request linked it, and the memory may be deleted
    # meanwhile: the row lock makes the two take turns, and a memory that is gone has nothing to link (on
    # PostgreSQL its links failed the foreign key at commit, an error in the worker's log).
    if not Memory.objects.select_for_update().filter(pk=memory.pk).values_list("pk", flat=True):
        return []
    known = _known_entities_in(memory)
    extraction = extraction or extract(
        memory.content, known_types={m.key: m.entity_type for m in known}, mentions=mentions
    )
    found = {mention.key for mention in extraction.mentions}
    extraction.mentions += [mention for mention in known if mention.key not in found]
    old_entity_ids = set(memory.entity_links.values_list("entity_id", flat=True))
    memory.entity_links.all().delete()
    named = extraction.mentions[:MAX_ENTITIES_PER_MEMORY]
    # The entities the user has and the relations among them are read once, not once per mention and per pair
    # (an add wrote ~60 statements, half of them these reads); each change is still written (and mirrored) alone.
    known_entities = {
        entity.key: entity
        for entity in Entity.objects.filter(user=memory.user, key__in={mention.key for mention in named})
    }
    entities: dict[str, Entity] = {}
    links = []
    for mention in named:
        if mention.key in entities:
            continue  # named twice: one link, with its first spelling
        entity = known_entities.get(mention.key)
        if entity is None:
            entity, _ = Entity.objects.get_or_create(
                user=memory.user,
                key=mention.key,
                defaults={"name": mention.name, "entity_type": mention.entity_type},
            )
        entities[mention.key] = entity
        links.append(MemoryEntity(memory=memory, entity=entity, mention=mention.name))
    MemoryEntity.objects.bulk_create(links)  # the memory's links were all deleted above: each is new
    linked = list(entities.values())
    between = _Relations(memory, linked)
    for source, target, relation_type in graph_edges(extraction, list(entities)):
        between.strengthen(entities[source], entities[target], relation_type)
    refresh_entity_frequencies(old_entity_ids | {entity.pk for entity in linked})
    return linked


def typed_pairs(extraction: Extraction) -> list[tuple[str, str, str]]:
    """The typed relations (source key, target key, type) the extractor found, once each."""
    return list(dict.fromkeys((r.source, r.target, r.relation_type) for r in extraction.relations))


def graph_edges(extraction: Extraction, keys: Sequence[str]) -> list[tuple[str, str, str]]:
    """One edge per related pair of the linked entities `keys`: its typed relation when the text states one,
    else CO_OCCURS (named together)."""
    linked = set(keys)
    typed = [edge for edge in typed_pairs(extraction) if edge[0] in linked and edge[1] in linked]
    related = {frozenset(edge[:2]) for edge in typed}
    together = [
        (a, b, "CO_OCCURS")
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if frozenset((a, b)) not in related
    ]
    return typed + together


def _written_as_name(name: str, content: str) -> bool:
    """Whether `content` writes the known entity `name` as a name: a name spelt with a capital ("GoT", "React") is
    found again only where a mention is spelt as it is or opens with a capital, unless the text has none at all (a
    writer who never uses them). Found regardless of case, "GoT" (a TV series) linked every memory that says
    "got", and a word once taken for a name at the start of a sentence ("Awesome!") every memory that says it:
    such an entity became the graph's busiest, and every search walked its links (LoCoMo's first two
    conversations: 1,862 links before, 1,498 after, the people's own unchanged)."""
    if name == name.casefold() or content == content.casefold():
        return True
    # Read as entity_key reads names: width folded ("ＧｏＴ" is "GoT"), any run of spaces alike.
    name, content = (unicodedata.normalize("NFKC", text) for text in (name, content))
    words = name.split()
    spelt = r"\s+".join(map(re.escape, words))
    mentions = re.finditer(rf"(?<![\w.]){spelt}(?![\w])", content, re.IGNORECASE)
    return any(mention.group().split() == words or mention.group()[0].isupper() for mention in mentions)


def _known_entities_in(memory: Memory) -> list[Mention]:
    """Entities this user already has, named again in the text: the extractor's recall grows with the graph
    (spaCy's small English model misses names like "React" that an earlier memory established)."""
    text = entity_key(memory.content)
    # The database finds the keys inside the text (instr / strpos): only those rows come back, not all of them.
    named = (
        Entity.objects.filter(user=memory.user)
        .annotate(position=StrIndex(Value(text), F("key")))
        .filter(position__gt=0)
        .order_by()
    )
    mentions = []
    for key, name, entity_type in named.values_list("key", "name", "entity_type"):
        if len(key) < 2:
            continue
        if key.isascii() and not re.search(rf"(?<![\w.]){re.escape(key)}(?![\w])", text):
            continue  # "java" inside "javascript" is not a mention
        if not _written_as_name(name, memory.content):
            continue
        mentions.append(Mention(name, entity_type))
    return mentions


class _Relations:
    """The relations among one memory's entities, read in one query, and strengthened by its edges: one edge per
    pair, a typed relation replacing the pair's co-occurrence."""

    def __init__(self, memory: Memory, entities: Sequence[Entity]) -> None:
        self.memory = memory
        ids = [entity.pk for entity in entities]
        self.of_pair: dict[frozenset[Any], list[Relation]] = {}
        for relation in Relation.objects.filter(user=memory.user, source_id__in=ids, target_id__in=ids):
            self.of_pair.setdefault(frozenset((relation.source_id, relation.target_id)), []).append(relation)

    def strengthen(self, source: Entity, target: Entity, relation_type: str) -> None:
        pair = self.of_pair.setdefault(frozenset((source.pk, target.pk)), [])
        if relation_type == "CO_OCCURS":
            if any(relation.relation_type != "CO_OCCURS" for relation in pair):
                return  # the pair already has its typed edge: one edge per pair
        else:
            for co_occurrence in [relation for relation in pair if relation.relation_type == "CO_OCCURS"]:
                co_occurrence.delete()  # a typed edge replaces it (delete(), so the graph mirror hears of it)
                pair.remove(co_occurrence)
        relation = next(
            (
                relation
                for relation in pair
                if (relation.source_id, relation.target_id, relation.relation_type)
                == (source.pk, target.pk, relation_type)
            ),
            None,
        )
        if relation is None:
            relation, created = Relation.objects.get_or_create(
                user=self.memory.user,
                source=source,
                target=target,
                relation_type=relation_type,
                defaults={"evidence": self.memory, "strength": 0.5 if relation_type == "CO_OCCURS" else 0.7},
            )
            pair.append(relation)
            if created:
                return
        relation.frequency += 1
        relation.strength = min(1.0, relation.strength + 0.1)
        relation.evidence = self.memory
        relation.save(update_fields=["frequency", "strength", "evidence", "updated_at"])


def refresh_entity_frequencies(entity_ids: Iterable[Any]) -> None:
    for entity in Entity.objects.filter(pk__in=list(entity_ids)).annotate(links=Count("memory_links")):
        if entity.links == 0:
            entity.delete()  # an entity nothing mentions any more
        elif entity.frequency != entity.links:
            entity.frequency = entity.links
            entity.save(update_fields=["frequency", "updated_at"])  # save(), so the graph mirror hears of it
