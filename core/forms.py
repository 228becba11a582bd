from django import forms

from core.models import ApiKeyScope


class ApiKeyForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses this key, e.g. “research agent”.")
    scope = forms.ChoiceField(choices=ApiKeyScope.choices, initial=ApiKeyScope.WRITE)
