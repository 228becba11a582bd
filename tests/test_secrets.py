"""Secrets found whole (core.secrets, issue 32): the full token, a URL's password, the value after a secret's name
in code, config and prose in several languages; a mask's placeholder is no search term and no entity.

Every text here is invented for the tests (other keys, other places, other languages than the issue's and the
evaluation's); bench/secrets_eval.py measures the detector on the scanners' own fixtures."""

import pytest

from core.privacy import KEEP, MASK, find, screen
from core.secrets import find_secrets, without_masks
from core.text import content_words, lexical_terms, query_words
from memories.entities import extract, llm_extract

# Long enough that no detector's own pattern covers it: only widening to the whole token masks all of it.
RESTRICTED_KEY = "rk_live_" + "Q7vNc2Lw9XsT4bHk8YpR3mZd6FgJ1aEu5KqW0oVi" * 2
GITLAB_TOKEN = "glpat-" + "vR8kQ2mX7nL4pT9wZ3cH6jD1sF5gB0aY" * 2
MASKED = {"secret": MASK, "personal": KEEP}


def masked(text: str) -> str:
    return screen(text, MASKED).text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"Payments in Accra use the restricted key {RESTRICTED_KEY} since March.",
            "Payments in Accra use the restricted key [api_key masked] since March.",
        ),
        (f"CI pushes with {GITLAB_TOKEN}", "CI pushes with [api_key masked]"),
        (
            "Cache at redis://default:L0ng@Pass:word@cache-7.example.net:6380/2 for sessions",
            "Cache at redis://default:[password masked]@cache-7.example.net:6380/2 for sessions",
        ),
        ("SMTP_PASSWORD=w1nt3r!Sky#", "SMTP_PASSWORD=[password masked]"),
        ('set MYSQL_PWD="Fj9 kq!2 zz"', 'set MYSQL_PWD="[password masked]"'),
        ("  ldap_bind_secret: 4u(t)9[x]{y}!", "  ldap_bind_secret: [password masked]"),
        (
            '{"service": "billing", "client_secret": "tQ9-4pLw_8Zr"}',
            '{"service": "billing", "client_secret": "[password masked]"}',
        ),
        ("if (vault_token == 'hvs.Qm7Tz2Kp') {", "if (vault_token == '[password masked]') {"),
        (
            "The door password for the Nairobi depot is Kif@ru2024",
            "The door password for the Nairobi depot is [password masked]",
        ),
        (
            "Das Passwort für das Büro in Hamburg lautet Elbe-Fähre-9.",
            "Das Passwort für das Büro in Hamburg lautet [password masked]",
        ),
        (
            "Le mot de passe du wifi à Lyon est Croissant#42",
            "Le mot de passe du wifi à Lyon est [password masked]",
        ),
        (
            "La contraseña del router en Sevilla es Giralda_1184",
            "La contraseña del router en Sevilla es [password masked]",
        ),
        ("成都仓库的门禁密码是 Panda#6621，别外传。", "成都仓库的门禁密码是 [password masked]，别外传。"),
        ("杭州分公司WiFi密码为xihu2025!", "杭州分公司WiFi密码为[password masked]"),
        (
            "大阪オフィスのWi-Fiパスワードは Namba-7781 です",
            "大阪オフィスのWi-Fiパスワードは [password masked] です",
        ),
        (
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBx\n-----END EC PRIVATE KEY-----\nthanks",
            "[private_key masked]\nthanks",
        ),
    ],
)
def test_a_secret_is_masked_whole(text, expected):
    assert masked(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "The password for the Oslo office is on the whiteboard.",
        "Le mot de passe est correct, merci.",
        "wifi密码是多少？",
        "The tokenizer splits each page into 512 tokens; max_tokens=2048 for summaries.",
        "Use a password manager such as KeePassXC 2.7 for the team.",
        "Release v2.14.0 shipped on 2024-06-01, notes at https://example.org/releases/v2-14-0-notes-for-users",
        "The secret to good bread is time.",
        "Commit 9c1f0e7a2b3d4c5e6f708192a3b4c5d6e7f80912 and build 6f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b passed.",
        "tough times pass, but friends stay",
    ],
)
def test_ordinary_text_keeps_every_character(text):
    assert find_secrets(text) == []


def test_what_an_earlier_partial_mask_left_is_masked_with_the_placeholder():
    assert masked("Deploy key [api_key masked]Zq81mRt5Lw end") == "Deploy key [api_key masked] end"
    assert (
        masked("mysql[password masked]Tk9@db.internal:3306/app") == "[password masked]@db.internal:3306/app"
    )


def test_masking_twice_changes_nothing_more():
    once = masked(
        "export VAULT_PASS='Xy7!kk p9' and the password for Lima is Inca&Sun3, key xoxb-2231-7781-Rq9. Ok?"
    )
    assert once == (
        "export VAULT_PASS='[password masked]' and the password for Lima is [password masked], "
        "key [api_key masked]. Ok?"
    )
    assert masked(once) == once
    assert find(once) == []


def test_personal_data_inside_a_secret_is_part_of_the_secret():
    findings = find("api_token=+14155552671abcDEF")
    assert [(f.kind, f.category) for f in findings] == [("password", "secret")]


def test_a_mask_is_no_search_term_and_no_content_word():
    assert lexical_terms("router [password masked] Kigali") == lexical_terms("router Kigali")
    assert query_words("[api_key masked] billing") == ["bill"]
    assert content_words("门禁 [password masked]") == content_words("门禁")
    assert without_masks("a [card masked] b") == "a   b"


def test_a_mask_names_no_entity():
    extraction = extract("Tendai's VPN password is [password masked] and his key is [api_key masked].")
    assert [m.name for m in extraction.mentions if "mask" in m.name.lower() or "api_key" in m.name] == []


class _ReplyingLLM:
    """An LLM that names the mask as an entity, as a model asked for "every entity" may."""

    def ask(self, system: str, user: str, temperature: float = 0.0) -> str:
        return '{"entities": [{"name": "[password masked]", "type": "ORG"}, {"name": "Tendai", "type": "PERSON"}]}'


def test_an_llm_naming_the_mask_makes_no_entity():
    extraction = llm_extract(_ReplyingLLM(), "Tendai's VPN password is [password masked].")
    assert [m.name for m in extraction.mentions] == ["Tendai"]
