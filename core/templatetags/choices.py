"""{{ value|choice_label:"app.Model.field" }}: the label people read for a stored choice value that reaches a
template without its model instance (a JSON history entry, a run's saved results), in the page's language."""

from django import template
from django.apps import apps

register = template.Library()


@register.filter
def choice_label(value: object, field: str) -> str:
    app_label, model_name, field_name = field.split(".")
    choices = dict(apps.get_model(app_label, model_name)._meta.get_field(field_name).flatchoices)
    # A value no choice names (a route added later, an empty entry) is shown as it is stored.
    return str(choices.get(value, value))
