"""Real headless Chromium: mark a search result as the right answer, then run the evaluation on its page."""

import pytest
from playwright.sync_api import Page, expect

from console.models import EvaluationRun, GoldenQuestion
from memories.actions.write import memory_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_mark_a_right_answer_then_run_the_evaluation(
    live_server, page: Page, log_in, csp_violations, django_user_model
):
    user = django_user_model.objects.create_user(username="alice", password="correct horse battery")
    meeting = memory_create(
        user=user, content="the team meeting is in Berlin", memory_type="episodic", importance=0.6
    )
    memory_create(user=user, content="bought apples and pears at the market", memory_type="episodic")

    log_in("alice")
    page.goto(f"{live_server.url}/memories/?q=Berlin+meeting")
    row = page.locator(f"#memory-{meeting.pk}")
    row.get_by_role("button", name="✓ right answer").click()
    expect(row.get_by_role("status")).to_contain_text("✓ saved")
    question = GoldenQuestion.objects.get(user=user)
    assert (question.text, question.expected_ids()) == ("Berlin meeting", {str(meeting.pk)})

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Evaluation").click()
    expect(page.get_by_role("heading", name="Evaluation", exact=True)).to_be_visible()
    expect(page.locator(f"#question-{question.pk}")).to_contain_text("the team meeting is in Berlin")
    # The page shows before its deferred htmx has run; a form used then posts without it (a page load).
    page.wait_for_load_state()
    page.evaluate("window.mnemoMarker = 'still here'")  # htmx swaps keep it; a page load would not

    page.get_by_role("button", name="Run evaluation").click()
    run = page.locator("#runs")
    expect(run.get_by_role("link", name="Run #")).to_be_visible(timeout=15_000)
    overall = run.locator(".summary-table tr.overall")
    expect(overall).to_contain_text("Fused search (the product)")
    expect(overall.locator("td.metric").first).to_have_text("1.000")  # hit@1
    expect(run.locator(".summary-table")).to_contain_text("lexical")
    assert page.evaluate("window.mnemoMarker") == "still here"
    assert EvaluationRun.objects.get(user=user).summary["overall"]["hit_at_1"] == 1.0

    run.get_by_role("link", name="Run #").click()
    expect(page.get_by_role("heading", name="Evaluation run #")).to_be_visible()
    expect(page.locator(".run-results")).to_contain_text("Berlin meeting")
    assert csp_violations == []
