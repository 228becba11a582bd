from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from core import ratelimits
from core.models import ApiKeyScope, PrivacySettings


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text=gettext_lazy("What uses this key, e.g. “research agent”.")
    )
    scope = forms.ChoiceField(choices=ApiKeyScope.choices, initial=ApiKeyScope.WRITE)


class PrivacySettingsForm(forms.ModelForm):
    class Meta:
        model = PrivacySettings
        fields = ["secrets", "personal"]
        labels = {"secrets": gettext_lazy("Secrets found"), "personal": gettext_lazy("Personal data found")}


class RateLimitedSignIn(AuthenticationForm):
    """Sign-in forms that refuse the attempts of an address that failed too often, for this username or in all
    (core.ratelimits)."""

    blocked = False
    request: HttpRequest  # not None: LoginView and the admin's login always pass the request

    def clean(self):
        if ratelimits.sign_in_blocked(self.request):
            self.blocked = True
            raise forms.ValidationError(
                _("Too many failed sign-ins from this address. Wait a minute and try again."),
                code="rate_limited",
            )
        try:
            return super().clean()
        except forms.ValidationError:
            ratelimits.record_sign_in_failure(self.request)
            raise


class SignInForm(RateLimitedSignIn, AuthenticationForm):
    pass


class AdminSignInForm(RateLimitedSignIn, AdminAuthenticationForm):
    pass
