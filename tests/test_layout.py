"""Imports point down: core is the foundation and imports no app; knowledge stands alone; nothing imports the
console but the project's configuration. An arrow that runs back up fails here."""

import ast
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
APPS = {"core", "memories", "knowledge", "agents", "console"}
# What each package must never import.
FORBIDDEN = {
    "core": {"memories", "knowledge", "agents", "console"},
    "knowledge": {"memories", "agents", "console"},
    "memories": {"agents", "console"},
    "agents": {"console"},
}


def imported_packages(path: Path) -> dict[str, int]:
    """Top-level project packages a module imports, anywhere in it (functions too), with the first line."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in APPS:
                found.setdefault(top, node.lineno)
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_down(package):
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {target}"
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
        for target, line in imported_packages(path).items()
        if target in FORBIDDEN[package]
    ]
    assert upward == []


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_foreign_keys_point_down(package):
    """A foreign key by name ("agents.ChatMessage") is an arrow no import shows; the schema points down too."""
    upward = [
        f"{model._meta.label}.{field.name} points at {field.related_model._meta.label}"
        for model in apps.get_app_config(package).get_models()
        for field in model._meta.get_fields()
        if field.concrete and field.is_relation and field.related_model._meta.app_label in FORBIDDEN[package]
    ]
    assert upward == []


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from memories.models import Memory\n")
    assert imported_packages(module) == {"memories": 2}


def test_the_graph_is_one_module_family():
    """The storage backends live in core/graphstore/, the feature (services, API, pages) in memories/graph/: a graph
    module anywhere else would be another place to look for it."""
    homes = {
        "/".join(path.relative_to(ROOT).parts[:2])
        for package in APPS
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
    ]
    for package in ("memories", "knowledge", "console"):
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
