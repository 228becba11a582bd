"""The ranking's numbers are the ones the retrieval report chose and measured (issue 34 item 2): a constant changed
in core/ranking.py without the report being run again fails here, whatever its effect on the other tests (a
mutation probe found recency and importance weights that no behaviour test noticed)."""

import ast
import re
from pathlib import Path

from core.ranking import CHOSEN_BY, RANKING

REPORT = Path(__file__).resolve().parent.parent / "bench" / "results" / "retrieval.md"


def reported_constants() -> dict[str, tuple[object, str]]:
    """The report's table of constants: name → (value, the data that chose it)."""
    text = REPORT.read_text(encoding="utf-8")
    table = text.split("| constant | value | chosen by |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.strip().splitlines()[1:]:  # after the |---| row
        name, value, chosen_by = (cell.strip() for cell in line.strip().strip("|").split("|", 2))
        rows[name] = (ast.literal_eval(value), chosen_by)
    return rows


def test_every_ranking_constant_is_the_value_the_report_chose():
    reported = reported_constants()
    shipped = RANKING.snapshot()
    assert sorted(reported) == sorted(shipped)
    floor = -1e9  # the report writes "no floor" as a floor no relevance reaches
    for name, value in shipped.items():
        expected = reported[name][0]
        if name == "floor" and value is None:
            assert expected == floor
        elif name == "graph_hops":
            assert list(value) == expected
        else:
            assert value == expected, f"{name}: {value!r} in core/ranking.py, {expected!r} in the report"


def test_the_report_names_the_data_that_chose_each_constant():
    assert {name: chosen_by for name, (_, chosen_by) in reported_constants().items()} == CHOSEN_BY


def test_the_report_states_the_shipped_configuration_it_measured():
    """The "Shipped" line names the values the run chose where they differ from the code's defaults then: each
    is the value core/ranking.py ships now."""
    shipped = re.search(r"^Shipped \(chosen on every development set\): (.+)\.$", REPORT.read_text(), re.M)
    assert shipped is not None
    values = dict(re.findall(r"(\w+)=((?:\{[^}]*\})|[^,]+)", shipped[1]))
    assert values, shipped[1]
    current = RANKING.snapshot()
    for name, value in values.items():
        expected = ast.literal_eval(value)
        assert (current[name] if current[name] is not None else -1e9) == expected, name
