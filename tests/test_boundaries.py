"""The arrows between the apps that no import shows. The imports themselves are import-linter's ([tool.importlinter]
in pyproject.toml, run by `make test`): config > console > agents > memories > conversations >
knowledge > core."""

import ast
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
LAYERS = (
    "console",
    "agents",
    "memories",
    "conversations",
    "knowledge",
    "core",
)  # the layers contract's order, below config
REGISTRY_LOOKUPS = {"get_model", "get_models", "get_app_config"}


def above(package: str) -> set[str]:
    return set(LAYERS[: LAYERS.index(package)])


@pytest.mark.parametrize("package", LAYERS[1:])
def test_foreign_keys_point_down(package):
    """A foreign key by name ("agents.ChatMessage") is an arrow no import shows; the schema points down too."""
    upward = [
        f"{model._meta.label}.{field.name} points at {field.related_model._meta.label}"
        for model in apps.get_app_config(package).get_models()
        for field in model._meta.get_fields()
        if field.concrete and field.is_relation and field.related_model._meta.app_label in above(package)
    ]
    assert upward == []


def registry_lookups(path: Path) -> list[int]:
    """The lines where a module asks the app registry for a model or an app (`apps.get_model("memories", ...)`)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in REGISTRY_LOOKUPS
    ]


def test_core_names_no_app_model_by_string():
    """core reads the apps' tables only through what the apps hand it (SqlGraphStore.read_relations_from), never
    by asking the registry for a model by name, an arrow import-linter cannot see. (Migrations get their
    historical models that way by design.)"""
    lookups = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "core").rglob("*.py"))
        if "migrations" not in path.parts
        for line in registry_lookups(path)
    ]
    assert lookups == []


def test_the_check_sees_a_registry_lookup(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        'from django.apps import apps\n\n\ndef f():\n    return apps.get_model("memories", "Relation")\n'
    )
    assert registry_lookups(module) == [5]


def test_the_graph_is_one_module_family():
    """The storage backends live in core/graphstore/, the feature (services, API, pages) in memories/graph/: a graph
    module anywhere else would be another place to look for it."""
    homes = {
        "/".join(path.relative_to(ROOT).parts[:2])
        for package in LAYERS
        for path in (ROOT / package).rglob("*graph*")
        if path.suffix in {"", ".py"} and "migrations" not in path.parts and "templates" not in path.parts
    }
    assert homes == {"core/graphstore", "memories/graph"}


def test_each_app_mounts_one_router_and_keeps_its_types_in_schemas():
    """The API's operations come from one router per app (the graph package's nested in its app's), and an app's
    request and response types live in its schemas module, not beside the operations."""
    mounted = [
        (node.args[0].value, node.args[1].value)
        for node in ast.walk(ast.parse((ROOT / "config" / "api.py").read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_router"
    ]
    assert mounted == [
        ("/", "memories.api.router"),
        ("/", "knowledge.api.router"),
        ("/", "console.api.router"),
        ("/", "agents.api.router"),
    ]
    for package in ("memories", "knowledge", "console", "agents"):
        for path in sorted((ROOT / package).rglob("api.py")):
            tree = ast.parse(path.read_text(), str(path))
            routers = [
                node
                for node in ast.walk(tree)
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Router"
            ]
            schemas = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
            assert len(routers) == 1, f"{path.relative_to(ROOT)} builds {len(routers)} routers"
            assert schemas == [], f"{path.relative_to(ROOT)} defines {schemas}"
