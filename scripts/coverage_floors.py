#!/usr/bin/env python3
"""Per-module coverage floors that only go up.

`make test` measures line coverage of the apps (pytest-cov, [tool.coverage] in pyproject.toml) into
.coverage.json, then runs this script, which fails when a module's coverage fell below its floor in
tests/coverage_floors.json. `--update` raises each floor to what was measured (whole percents, rounded down)
and never lowers one; commit the floors file it writes. Floors only mean something after a whole `make test`:
a single lane leaves most modules lower.

    .venv/bin/python scripts/coverage_floors.py .coverage.json            # check
    .venv/bin/python scripts/coverage_floors.py .coverage.json --update   # raise the floors, then commit them
"""

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ROOT / "tests" / "coverage_floors.json"


def measured(report: dict) -> dict[str, float]:
    """Module path → percent of its statements the tests ran."""
    return {path: data["summary"]["percent_covered"] for path, data in report["files"].items()}


def shortfalls(*, floors: dict[str, int], percents: dict[str, float], root: Path = ROOT) -> list[str]:
    """One line per module below its floor, or gone from the measurement while its file is still there."""
    problems = []
    for path, floor in sorted(floors.items()):
        if path not in percents:
            if (root / path).exists():
                problems.append(
                    f"{path}: not measured (floor {floor}%): is it still under [tool.coverage.run]?"
                )
            else:
                problems.append(f"{path}: has a floor ({floor}%) but no file: moved or removed? run --update")
        elif percents[path] < floor:
            problems.append(f"{path}: {percents[path]:.1f}% < its floor {floor}%")
    return problems


def raised(*, floors: dict[str, int], percents: dict[str, float], root: Path = ROOT) -> dict[str, int]:
    """The floors after a run: each measured module's floor up to its coverage, none lowered; a removed module's
    floor goes with its file."""
    kept = {path: floor for path, floor in floors.items() if (root / path).exists()}
    for path, percent in percents.items():
        kept[path] = max(kept.get(path, 0), math.floor(percent))
    return dict(sorted(kept.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("report", type=Path, help="coverage JSON (pytest --cov-report=json:PATH)")
    parser.add_argument("--update", action="store_true", help="raise the floors to this run's coverage")
    parser.add_argument("--floors", type=Path, default=FLOORS)
    args = parser.parse_args(argv)

    report = json.loads(args.report.read_text())
    percents = measured(report)
    floors = json.loads(args.floors.read_text()) if args.floors.exists() else {}
    total = report["totals"]["percent_covered"]
    if args.update:
        new = raised(floors=floors, percents=percents)
        args.floors.write_text(json.dumps(new, indent=1) + "\n")
        went_up = sum(new[path] > floors.get(path, -1) for path in new)
        print(
            f"coverage {total:.1f}% over {len(percents)} modules; {went_up} floors raised or added in {args.floors}"
        )
        return 0
    problems = shortfalls(floors=floors, percents=percents)
    unfloored = sorted(set(percents) - set(floors))
    print(f"coverage {total:.1f}% over {len(percents)} modules, {len(floors)} with a floor")
    if unfloored:
        shown = ", ".join(unfloored[:5]) + (", ..." if len(unfloored) > 5 else "")
        print(f"{len(unfloored)} modules have no floor yet (--update adds them): {shown}")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
