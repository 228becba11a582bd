"""The label people read, in the page's language, for an evaluation target stored in a run's saved results."""

from django import template

from console.models import Target

register = template.Library()


@register.filter
def target_label(value: str) -> str:
    return str(dict(Target.choices).get(value, value))
