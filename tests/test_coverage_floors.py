"""scripts/coverage_floors.py: per-module coverage floors that fail when a module drops and only ever go up."""

import importlib.util
import json

from tests.served import ROOT

spec = importlib.util.spec_from_file_location("coverage_floors", ROOT / "scripts" / "coverage_floors.py")
floors_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(floors_script)


def report(percents: dict[str, float], statements: int = 0) -> dict:
    files = {
        path: {"summary": {"percent_covered": percent, "num_statements": statements}}
        for path, percent in percents.items()
    }
    return {"files": files, "totals": {"percent_covered": 50.0}}


def test_a_module_below_its_floor_fails_and_one_at_it_passes(tmp_path):
    (tmp_path / "a.py").touch()
    (tmp_path / "b.py").touch()
    floors = {"a.py": 80, "b.py": 70}
    problems = floors_script.shortfalls(floors=floors, percents={"a.py": 79.9, "b.py": 70.0}, root=tmp_path)
    assert problems == ["a.py: 79.9% < its floor 80%"]


def test_a_module_may_miss_two_statements_more_than_its_floor_allows(tmp_path):
    (tmp_path / "m.py").touch()
    floors = {"m.py": 90}  # 100 statements: 10 may be missed, and 2 more for what timing decides
    statements = {"m.py": 100}
    assert (
        floors_script.shortfalls(floors=floors, percents={"m.py": 88.0}, statements=statements, root=tmp_path)
        == []
    )
    assert floors_script.shortfalls(
        floors=floors, percents={"m.py": 87.0}, statements=statements, root=tmp_path
    ) == ["m.py: 87.0% < its floor 90% (by more than 2 of its 100 statements)"]


def test_a_floored_module_that_is_gone_or_unmeasured_is_named(tmp_path):
    (tmp_path / "kept.py").touch()
    problems = floors_script.shortfalls(floors={"gone.py": 50, "kept.py": 50}, percents={}, root=tmp_path)
    assert problems == [
        "gone.py: has a floor (50%) but no file: moved or removed? run --update",
        "kept.py: not measured (floor 50%): is it still under [tool.coverage.run]?",
    ]


def test_update_raises_floors_never_lowers_them_and_drops_removed_files(tmp_path):
    for name in ("up.py", "down.py", "new.py"):
        (tmp_path / name).touch()
    floors = {"up.py": 60, "down.py": 90, "gone.py": 40}
    percents = {"up.py": 75.6, "down.py": 50.0, "new.py": 33.3}
    assert floors_script.raised(floors=floors, percents=percents, root=tmp_path) == {
        "down.py": 90,
        "new.py": 33,
        "up.py": 75,
    }


def test_the_command_fails_on_a_drop_and_update_writes_the_floors(tmp_path, capsys):
    measured = tmp_path / "coverage.json"
    floors = tmp_path / "floors.json"
    measured.write_text(json.dumps(report({"core/limits.py": 40.0}, statements=50)))
    floors.write_text(json.dumps({"core/limits.py": 41}))
    assert floors_script.main([str(measured), "--floors", str(floors)]) == 0  # one statement short: the slack
    floors.write_text(json.dumps({"core/limits.py": 46}))
    assert floors_script.main([str(measured), "--floors", str(floors)]) == 1
    assert (
        "core/limits.py: 40.0% < its floor 46% (by more than 2 of its 50 statements)"
        in capsys.readouterr().err
    )
    measured.write_text(json.dumps(report({"core/limits.py": 97.5})))
    assert floors_script.main([str(measured), "--floors", str(floors), "--update"]) == 0
    assert json.loads(floors.read_text()) == {"core/limits.py": 97}
    assert floors_script.main([str(measured), "--floors", str(floors)]) == 0
