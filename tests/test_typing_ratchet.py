"""The strict-typing ratchet: the modules mypy checks strictly ([[tool.mypy.overrides]] in pyproject.toml) only
ever grow. A module leaves STRICT only by being removed from the tree, and then this list loses it in the same
commit; a module that joins the override joins STRICT too."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The list only grows (pyproject.toml says the same beside the override).
STRICT = {
    "core.embedders.*",
    "core.embeddings",
    "core.hybrid",
    "core.ranking",
    "knowledge.ingest",
    "memories.actions.*",
    "memories.entity_links",
    "memories.facts",
    "memories.retrieval",
    "memories.scoring",
    "memories.statements",
    "memories.types",
}
# mypy's --strict, flag by flag (an override may not say `strict = true`).
STRICT_FLAGS = {
    "disallow_any_generics",
    "disallow_subclassing_any",
    "disallow_untyped_calls",
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "disallow_untyped_decorators",
    "no_implicit_optional",
    "warn_return_any",
    "no_implicit_reexport",
    "strict_equality",
    "extra_checks",
}


def strict_override() -> dict:
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = [override for override in overrides if override.get("disallow_untyped_defs")]
    assert len(strict) == 1, "one strict override, so the ratchet has one list to read"
    return strict[0]


def test_no_module_leaves_the_strict_list():
    assert STRICT - set(strict_override()["module"]) == set()


def test_every_strict_module_is_in_the_ratchet():
    assert set(strict_override()["module"]) - STRICT == set()


def test_every_strict_module_names_a_file_of_the_tree():
    for module in strict_override()["module"]:
        path = ROOT / module.removesuffix(".*").replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), module


def test_the_override_sets_every_strict_flag():
    override = strict_override()
    assert {flag for flag in STRICT_FLAGS if override.get(flag) is True} == STRICT_FLAGS
