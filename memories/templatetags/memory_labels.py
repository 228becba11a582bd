"""The labels people read, in the page's language, for memory choices that reach a template as bare stored values
(a source in a memory's provenance, an entity type in a graph edit's recorded changes). A value no choice names
(a route added later) is shown as stored. The same for the fields a memory edit records, which the history
shows by name."""

from django import template
from django.utils.translation import gettext_lazy as _

from memories.forms import MemoryFieldsForm
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


# Every field a memory edit records (memories.actions: EDITABLE_FIELDS and the system's own changes): the fields
# a person sets by the edit form's labels, the system's by their own.
_CHANGED_FIELDS = {
    **{name: field.label for name, field in MemoryFieldsForm.base_fields.items()},
    "metadata": _("Metadata"),  # the form's label also names the input's format, JSON
    "archived_at": _("Archived"),
    "superseded_by": _("Replaced by"),
    "supersedes": _("Replaces"),
    "merged": _("Merged"),
    "seen_count": _("Times seen"),
}


@register.filter
def changed_field_label(name: str) -> str:
    return str(_CHANGED_FIELDS.get(name, name))
