import pytest
from django.core.management import call_command

from knowledge.models import Document
from memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


def test_setup_demo_creates_the_login_and_loads_the_tutorial_examples_once(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path
    settings.MNEMO_DEMO_PASSWORD = ""
    call_command("setup_demo")
    first = capsys.readouterr().out
    assert "Log in at http://127.0.0.1:8000 as demo / " in first
    password = first.split("as demo / ")[1].split()[0]
    assert f"password: {password}" in (tmp_path / "demo-login.txt").read_text()
    assert (tmp_path / "demo-login.txt").stat().st_mode & 0o777 == 0o600
    contents = set(Memory.objects.values_list("content", flat=True))
    assert "李四是前端工程师，擅长React和Vue.js开发" in contents
    assert Document.objects.count() == 3
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}

    call_command("setup_demo", url="http://127.0.0.2:8123")
    second = capsys.readouterr().out
    assert password not in second  # printed once
    assert "Log in at http://127.0.0.2:8123 as demo; the password is" in second
    assert Memory.objects.count() == len(contents)  # not loaded twice
    assert Document.objects.count() == 3


def test_setup_demo_takes_the_login_from_the_settings(settings, tmp_path, client):
    """MNEMO_DEMO_USERNAME and MNEMO_DEMO_PASSWORD, read from the environment by config/settings.py."""
    settings.DATA_DIR = tmp_path
    settings.MNEMO_DEMO_USERNAME = "operator"
    settings.MNEMO_DEMO_PASSWORD = "from-the-env-123"
    call_command("setup_demo")
    assert client.login(username="operator", password="from-the-env-123")
