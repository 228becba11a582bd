"""The hashed locks that `make run` and `make test` install from still match pyproject.toml (else: `make lock`)."""

import re
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.served import ROOT

REQUIREMENTS = ROOT / "requirements"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")


def entries(lock_name: str) -> dict[str, str]:
    """Name → the lock's entry for it: `name==version`, its `--hash` lines and uv's `# via` notes."""
    text = (REQUIREMENTS / lock_name).read_text()
    found = {}
    for entry in re.split(r"\n(?=\S)", text):  # an entry ends where the next unindented line starts
        match = PIN.match(entry)
        if match:
            assert "--hash=sha256:" in entry, f"{lock_name}: {match[1]} has no hash"
            found[canonicalize_name(match[1])] = entry
    return found


def pins(lock_name: str) -> dict[str, str]:
    return {name: PIN.match(entry)[2] for name, entry in entries(lock_name).items()}


def declared(*, extra: str | None = None) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return [Requirement(line) for line in listed]


# `make run` installs lock.txt, `make test` lock-test.txt.
LOCKS = [("lock.txt", declared()), ("lock-test.txt", declared() + declared(extra="test"))]


@pytest.mark.parametrize(("lock_name", "requirements"), LOCKS)
def test_the_lock_pins_every_dependency_of_pyproject(lock_name, requirements):
    pinned = pins(lock_name)
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        assert name in pinned, (
            f"pyproject.toml needs {requirement}, {lock_name} has no {name}: run `make lock`"
        )
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"pyproject.toml needs {requirement}, {lock_name} pins {name}=={pinned[name]}: run `make lock`"
        )


@pytest.mark.parametrize(("lock_name", "requirements"), LOCKS)
def test_the_lock_holds_no_dependency_that_pyproject_dropped(lock_name, requirements):
    direct = {name for name, entry in entries(lock_name).items() if "mnemo (pyproject.toml)" in entry}

    assert direct == {canonicalize_name(requirement.name) for requirement in requirements}, "run `make lock`"


def test_make_run_and_make_test_install_the_same_versions():
    run, test = pins("lock.txt"), pins("lock-test.txt")

    assert {name: test.get(name) for name in run} == run


def test_the_installers_are_locked_at_the_versions_requirements_tools_in_names():
    wanted = [
        Requirement(line)
        for line in (REQUIREMENTS / "tools.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    assert pins("tools.txt") == {
        canonicalize_name(r.name): str(r.specifier).removeprefix("==") for r in wanted
    }
