"""No Docker engine runs here, so check docker-compose.yml against the settings it has to feed."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def test_it_has_the_production_services():
    assert set(SERVICES) == {"web", "worker", "beat", "postgres", "redis", "qdrant", "neo4j"}


def test_every_service_has_a_health_check_and_stateful_ones_a_volume():
    for name, service in SERVICES.items():
        assert "healthcheck" in service, name
    for name in ("postgres", "redis", "qdrant", "neo4j"):
        assert SERVICES[name]["volumes"], name
        volume = SERVICES[name]["volumes"][0].split(":")[0]
        assert volume in COMPOSE["volumes"]


def test_web_worker_and_beat_get_every_production_variable_the_settings_read():
    settings_text = (ROOT / "config" / "settings.py").read_text()
    read = set(re.findall(r'env_\w+\(\s*"([A-Z0-9_]+)"', settings_text))
    production = {
        name
        for name in read
        if name.startswith(("DATABASE_", "QDRANT_", "NEO4J_", "EMBED_", "LLM_", "CELERY_"))
        and name not in {"CELERY_RESULT_BACKEND", "QDRANT_VECTOR_SIZE", "LLM_TIMEOUT"}
    } | {"DATABASE_URL"}
    for name in ("web", "worker", "beat"):
        environment = SERVICES[name]["environment"]
        assert production <= set(environment), production - set(environment)


def test_the_wiring_points_at_the_compose_services():
    environment = SERVICES["web"]["environment"]
    assert environment["DATABASE_URL"].endswith("@postgres:5432/mnemo")
    assert environment["CELERY_BROKER_URL"] == "redis://redis:6379/0"
    assert environment["QDRANT_URL"] == "http://qdrant:6333"
    assert environment["NEO4J_URI"] == "bolt://neo4j:7687"
    assert SERVICES["web"]["ports"] == ["8000:8000"]
    assert "celery -A config worker" in SERVICES["worker"]["command"]
    assert "celery -A config beat" in SERVICES["beat"]["command"]
    assert "gunicorn config.wsgi" in SERVICES["web"]["command"]
    assert SERVICES["neo4j"]["image"].startswith("neo4j:5")


def test_env_example_documents_every_variable_the_settings_read():
    settings_text = (ROOT / "config" / "settings.py").read_text()
    read = set(re.findall(r'env_\w+\(\s*"([A-Z0-9_]+)"', settings_text)) | {"DATABASE_URL", "MNEMO_DATA_DIR"}
    documented = set(re.findall(r"^([A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read <= documented, read - documented
