"""Forms of the chat page: they only parse and check input; the turn itself runs in agents.agent."""

from django import forms
from django.utils.translation import gettext_lazy

from core.limits import MAX_CHAT_MESSAGE_CHARS


class MessageForm(forms.Form):
    text = forms.CharField(
        label=gettext_lazy("Message"),
        max_length=MAX_CHAT_MESSAGE_CHARS,
        strip=True,
        widget=forms.Textarea(
            attrs={
                "rows": 2,
                "placeholder": gettext_lazy("Message Mnemo… (Enter sends, Shift+Enter starts a new line)"),
                "autocomplete": "off",
            }
        ),
        error_messages={"required": gettext_lazy("Type a message first.")},
    )
