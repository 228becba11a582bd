"""Secrets and personal data on write (issue 14): found in memories, documents and chat messages, then masked,
kept or refused by the owner's settings; what was found is recorded, never the value."""

import pytest

from core.models import PrivacySettings
from core.privacy import MASK, find, screen
from knowledge.models import Chunk, Document
from memories.models import Memory, MemoryEdit

pytestmark = pytest.mark.django_db(transaction=True)

OPENAI_KEY = "sk-proj-Xa7bC9dE1fG3hJ5kL7mN9pQ1rS3tU5vW7"
SAMPLES = {
    "api_key": [
        f"My OpenAI key is {OPENAI_KEY}",
        "AWS access key AKIAIOSFODNN7EXAMPLE for the backup bucket",
        "GitHub token ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ],
    "password": [
        "wifi password: Tr0ub4dor&3",
        "my password is hunter2!",
        "服务器的密码是 Xk9#mq2v",
        "门禁密钥：48213390",
    ],
    "private_key": ["-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"],
    "phone": ["Call Ana at +351 912 345 678", "我的手机号是13812345678", "office line (415) 555-2671"],
    "card": ["Visa 4111 1111 1111 1111, expires 12/27"],
    "cn_resident_id": ["用户的身份证号是11010519491231002X"],
    "us_ssn": ["SSN 123-45-6789"],
}
ORDINARY = [
    "The meeting is at 10:30 in room 401 on 2024-05-06.",
    "Python 3.12.1 was released; upgrade from 3.11.4.",
    "Order 1234567890123 shipped with tracking code 1Z999AA10123456784.",
    "Commit 3f2c9a1b7e4d5c6b8a9f0e1d2c3b4a5f6e7d8c9b fixed the login bug.",
    "The user forgot their password again and reset it.",
    "用户的密码管理器是 1Password，习惯每季度换一次密码。",
    "我们在2023年10月15日签了合同，金额是128000元。",
    "The token economy of the game is broken; tokens cost 5 each.",
    "Ana ran 42.195 km in 3:58:12 at the Lisbon marathon.",
    "ISBN 978-3-16-148410-0 is on the shelf, page 1024.",
    "会议号 98765432101，周五上午九点。",
    "Invoice 2023-10-15 total 1,234.56 CNY, reference INV-000123.",
]


@pytest.mark.parametrize(("kind", "text"), [(k, t) for k, texts in SAMPLES.items() for t in texts])
def test_each_kind_is_found_and_masked(kind, text):
    assert [f.kind for f in find(text)] == [kind]
    masked = screen(text, {"secret": MASK, "personal": MASK}).text
    assert f"[{kind} masked]" in masked


def test_ordinary_text_has_no_findings():
    assert {text: find(text) for text in ORDINARY} == {text: [] for text in ORDINARY}


def test_a_memory_is_masked_by_default_for_secrets_and_kept_for_personal_data(api, user):
    body = api("post", "/memories/", {"content": f"Deploy key {OPENAI_KEY}; call me on 13812345678"}).json()
    assert body["content"] == "Deploy key [api_key masked]; call me on 13812345678"
    assert body["metadata"]["privacy"] == [
        {"kind": "api_key", "category": "secret", "action": "mask"},
        {"kind": "phone", "category": "personal", "action": "keep"},
    ]
    assert not Memory.objects.filter(content__contains=OPENAI_KEY).exists()
    assert OPENAI_KEY not in str(list(Memory.objects.values_list("metadata", flat=True)))
    # An edit is screened too.
    memory_id = body["id"]
    edited = api("patch", f"/memories/{memory_id}", {"content": "my password is hunter2!"}).json()
    assert edited["content"] == "my password is [password masked]"
    assert "hunter2" not in str(list(MemoryEdit.objects.values_list("changes", flat=True)))


def test_refused_data_is_not_stored_and_the_answer_says_why(api, user):
    PrivacySettings.objects.create(user=user, secrets="keep", personal="refuse")
    response = api(
        "post", "/memories/", {"content": "我的身份证号是11010519491231002X", "memory_type": "semantic"}
    )
    assert response.status_code == 422
    assert "身份证号" in response.json()["detail"] and "privacy settings" in response.json()["detail"]
    assert not Memory.objects.filter(user=user).exists()
    kept = api("post", "/memories/", {"content": f"key {OPENAI_KEY}"}).json()
    assert kept["content"] == f"key {OPENAI_KEY}"  # secrets: keep


def test_documents_and_chat_messages_are_screened(logged_in, user):
    from agents.agent import Agent
    from knowledge.services import document_create_from_text
    from memories.actions.rules import session_for_key

    accepted = document_create_from_text(
        user=user, title="ops", text=f"# Ops\n\nThe staging key is {OPENAI_KEY}.", background=False
    )
    document = Document.objects.get(pk=accepted.document.pk)
    assert OPENAI_KEY not in document.markdown and document.privacy_findings[0]["kind"] == "api_key"
    assert not Chunk.objects.filter(text__contains=OPENAI_KEY).exists()

    session = session_for_key(user=user, key="privacy")
    Agent(user=user, session=session).run("remember my wifi password: Tr0ub4dor&3")
    assert not session.messages.filter(content__contains="Tr0ub4dor").exists()
    assert not Memory.objects.filter(content__contains="Tr0ub4dor").exists()
    assert session.messages.filter(content__contains="[password masked]").exists()


def test_the_settings_form_saves_the_policies(logged_in, user):
    response = logged_in.post("/settings/privacy/", {"secrets": "refuse", "personal": "mask"})
    assert response.status_code == 302 and response["Location"] == "/settings/privacy/"
    assert PrivacySettings.policies_for(user) == {"secret": "refuse", "personal": "mask"}
    page = logged_in.get("/settings/privacy/").content.decode()
    assert "Privacy settings saved" in page and '<option value="refuse" selected>' in page
