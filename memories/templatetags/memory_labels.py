"""The labels people read, in the page's language, for memory choices that reach a template as bare stored values
(a source in a memory's provenance, an entity type in a graph edit's recorded changes). A value no choice names
(a route added later) is shown as stored."""

from django import template

from memories.models import EditVia, EntityType, MemoryType

register = template.Library()


@register.filter
def via_label(value: str) -> str:
    return str(dict(EditVia.choices).get(value, value))


@register.filter
def entity_type_label(value: str) -> str:
    return str(dict(EntityType.choices).get(value, value))


@register.filter
def memory_type_label(value: str) -> str:
    return str(dict(MemoryType.choices).get(value, value))
