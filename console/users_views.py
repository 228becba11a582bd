"""The Users page: every end-user with what they hold, for staff; each row opens that user's own pages.

Anyone but staff gets 404 here, as under /users/<id>/ (core.acting).
"""

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from console.users import find_users, summarize
from core.acting import subject_url
from core.models import SubjectChange
from core.pages import AuthenticatedHttpRequest
from core.querystrings import clean_query

USERS_PER_PAGE = 50
RECENT_CHANGES = 20
MAX_QUERY_CHARS = 200
TEMPLATE = "console/users.html"
# The pages a row links, as (label, URL name): each shows that user's data (core.acting).
USER_PAGES = (
    ("memories", "memory_list"),
    ("graph", "graph"),
    ("documents", "library"),
    ("sessions", "session_list"),
    ("evaluation", "evaluation"),
)


@login_required
@require_GET
def users(request: AuthenticatedHttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise Http404("No page is at this address.")
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    paginator = Paginator(find_users(query), USERS_PER_PAGE)
    number = request.GET.get("page")
    page = paginator.get_page(paginator.num_pages if number == "last" else number)
    rows = summarize(list(page))
    for row in rows:
        row.links = {label: subject_url(row.user, name) for label, name in USER_PAGES}  # type: ignore[attr-defined]
        row.url = subject_url(row.user, "dashboard")  # type: ignore[attr-defined]
    context = {"page": page, "rows": rows, "q": query, "query": clean_query(request.GET, "page")}
    if request.htmx.target == "user-table":
        return render(request, f"{TEMPLATE}#user-table", context)
    context["changes"] = SubjectChange.objects.select_related("staff", "subject")[:RECENT_CHANGES]
    return render(request, TEMPLATE, context)
