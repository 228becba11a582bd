"""The Settings page: one page, four tabs, always the signed-in person's own (account and password, privacy,
your data's export and import, API keys). Each tab has its own address under /settings/; the addresses these
used to have (/api-keys/, /privacy/, /data/...) redirect to them (`moved`)."""

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.models import User
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from console import portability
from console.secret_scan import scan_secrets
from core.forms import ApiKeyForm, PrivacySettingsForm
from core.models import ApiKey, PrivacySettings
from core.pages import AuthenticatedHttpRequest
from core.services import api_key_create, api_key_revoke

TEMPLATE = "console/settings.html"
# (tab, URL name, label), in the order the tabs show.
TABS = [
    ("account", "settings", gettext_lazy("Account")),
    ("privacy", "privacy_settings", gettext_lazy("Privacy")),
    ("data", "data_settings", gettext_lazy("Export and import")),
    ("api-keys", "api_keys", gettext_lazy("API keys")),
]


def _render(request: AuthenticatedHttpRequest, tab: str, context: dict, status: int = 200) -> HttpResponse:
    tabs = [{"name": name, "url": reverse(url_name), "label": label} for name, url_name, label in TABS]
    return render(request, TEMPLATE, {"tab": tab, "tabs": tabs, **context}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def account(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Who you are signed in as, and a new password (the old one first, Django's password validators)."""
    form = PasswordChangeForm(request.user, request.POST or None)
    if request.method == "POST":
        if form.is_valid():
            form.save()
            update_session_auth_hash(request, form.user)  # stay signed in on this browser
            messages.success(request, _("Password changed."))
            return redirect("settings")
        return _render(request, "account", {"password_form": form}, status=422)
    return _render(request, "account", {"password_form": form})


@login_required
@require_http_methods(["GET", "POST"])
def privacy_settings(request: AuthenticatedHttpRequest) -> HttpResponse:
    """What happens to secrets and personal data in new memories, documents and chat messages."""
    row = PrivacySettings.objects.filter(user=request.user).first()
    form = PrivacySettingsForm(request.POST or None, instance=row or PrivacySettings(user=request.user))
    if request.method == "POST":
        if form.is_valid():
            form.save()
            messages.success(request, _("Privacy settings saved: they apply to what is stored from now on."))
            return redirect("privacy_settings")
        messages.error(request, _("Choose mask, keep or refuse for each kind."))
        return _render(request, "privacy", {"privacy_form": form}, status=422)
    return _render(request, "privacy", {"privacy_form": form})


@login_required
@require_POST
def secret_scan(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Scan the stored data for secrets: "preview" counts them, "mask" masks them (console.secret_scan). Your
    own data; staff may scan every user's."""
    everyone = request.POST.get("everyone") == "1"
    if everyone and not request.user.is_staff:
        return HttpResponse("Only staff may scan every user's data.", status=403)
    dry_run = request.POST.get("action") != "mask"
    users = list(User.objects.order_by("pk")) if everyone else [request.user]
    report = scan_secrets(users=users, dry_run=dry_run, editor=request.user)
    context = {"scan": report, "scan_everyone": everyone}
    if request.htmx:
        return render(request, f"{TEMPLATE}#secret-scan", context)
    privacy_form = PrivacySettingsForm(instance=PrivacySettings.objects.filter(user=request.user).first())
    return _render(request, "privacy", {"privacy_form": privacy_form, **context})


@login_required
@require_GET
def data_settings(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _render(request, "data", {})


@login_required
@require_GET
def data_export(request: AuthenticatedHttpRequest) -> FileResponse:
    """The signed-in user's archive, as the API's /data/export gives it."""
    return FileResponse(
        portability.export_file(request.user),
        as_attachment=True,
        filename=portability.archive_name(request.user),
        content_type="application/zip",
    )


@login_required
@require_POST
def data_import(request: AuthenticatedHttpRequest) -> HttpResponse:
    upload = request.FILES.get("archive")
    if upload is None:
        messages.error(request, _("Choose an archive exported from Mnemo first."))
        return redirect("data_settings")
    try:
        imported = portability.import_upload(upload, as_username=request.user.get_username())
    except portability.PortabilityError as exc:
        messages.error(
            request, _("%(file)s was not imported: %(error)s") % {"file": upload.name, "error": exc}
        )
        return redirect("data_settings")
    total, merged = sum(imported.counts.values()), sum(imported.merged.values())
    if merged:
        imported_text = _(
            "Imported %(file)s: %(total)s rows (%(merged)s more matched what you already had), now searchable."
        )
    else:
        imported_text = _("Imported %(file)s: %(total)s rows, now searchable.")
    messages.success(
        request, imported_text % {"file": upload.name, "total": f"{total:,}", "merged": f"{merged:,}"}
    )
    return redirect("data_settings")


@login_required
@require_http_methods(["GET", "POST"])
def api_keys(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ApiKeyForm(request.POST or None)
    new_key = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            new_key = api_key_create(user=request.user, **form.cleaned_data)[1]
            form = ApiKeyForm()
        else:
            status = 422
    context = {"form": form, "new_key": new_key, "keys": ApiKey.objects.for_user(request.user)}
    return _render(request, "api-keys", context, status=status)


@login_required
@require_POST
def api_key_revoke_view(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    api_key = get_object_or_404(ApiKey.objects.for_user(request.user), pk=pk)
    api_key_revoke(api_key=api_key)
    if request.htmx:
        return render(request, f"{TEMPLATE}#key-row", {"key": api_key})
    messages.success(request, _("Key “%(name)s” revoked.") % {"name": api_key.name})
    return redirect("api_keys")


def moved(url_name: str) -> Callable[..., HttpResponse]:
    """A view for an address a settings page used to have: a read is sent on permanently (301) with its query,
    and a form posted from a page opened before the move is sent on with its method and body (308)."""

    def redirect_to(request: HttpRequest, **kwargs: object) -> HttpResponse:
        url = reverse(url_name, kwargs=kwargs or None)
        query = request.META.get("QUERY_STRING", "")
        response = HttpResponseRedirect(f"{url}?{query}" if query else url)
        response.status_code = 301 if request.method in ("GET", "HEAD") else 308
        return response

    return redirect_to
