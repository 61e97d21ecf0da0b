"""The mutation check's list is well formed (tests/mutants/run.py runs the mutants on demand): each
original text occurs exactly once in its file, each new file does not exist yet, and pytest collects
every test named to kill a mutant."""

from __future__ import annotations

from tests.mutants import run

QUEUE = "rs_spark/net/protocol/write_queue.py"
WQ = "tests/net/test_write_queue.py::"
RESUME_TEST = WQ + "test_a_paused_stream_stays_paused_below_high_water_until_the_queue_drained_below_half"
ORDER_TEST = WQ + "test_frames_leave_in_the_order_they_came_and_the_budget_is_given_back_exactly"


def test_each_mutant_s_text_occurs_once_in_its_file():
    mutants = run.load()
    assert mutants
    assert run.problems(mutants) == []


def test_each_test_named_to_kill_a_mutant_exists():
    assert run.missing_tests(run.load()) == []


def test_a_malformed_list_is_told(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\nx = 1\n")
    listed = tmp_path / "mutants.toml"
    listed.write_text(
        "\n".join(
            [
                "[[mutant]]",
                'name = "twice"',
                'file = "a.py"',
                'original = "x = 1"',
                'replacement = "x = 2"',
                'tests = ["tests/test_nothing.py::test_nothing"]',
                "[[mutant]]",
                'name = "exists"',
                'file = "a.py"',
                'new_file = ""',
                "tests = []",
            ]
        )
    )
    mutants = run.load(listed)
    assert run.problems(mutants, tmp_path) == [
        "twice: its original text occurs 2 times in a.py, not once",
        "exists: names no test",
        "exists: a.py exists already",
    ]
    assert run.missing_tests(mutants, tmp_path) == ["no test tests/test_nothing.py::test_nothing"]


def test_a_node_id_maps_to_its_junit_name():
    assert run._junit_key("tests/spark/test_planner.py::test_planner_table[once max busy room -]") == (
        "tests.spark.test_planner::test_planner_table[once max busy room -]"
    )


def test_the_run_tells_a_killed_mutant_from_one_that_survived_and_leaves_the_checkout_alone(tmp_path, capsys):
    listed = tmp_path / "mutants.toml"
    listed.write_text(
        f"""
[[mutant]]
name = "resume at high water"
file = "{QUEUE}"
original = "if self._paused and self._bytes < self.high_water // 2:"
replacement = "if self._paused and self._bytes < self.high_water:"
tests = ["{RESUME_TEST}"]

[[mutant]]
name = "resume at high water, named with a test that does not see it"
file = "{QUEUE}"
original = "if self._paused and self._bytes < self.high_water // 2:"
replacement = "if self._paused and self._bytes < self.high_water:"
tests = ["{ORDER_TEST}"]
"""
    )
    before = (run.ROOT / QUEUE).read_text()
    assert run.main(["--mutants", str(listed)]) == 1
    out = capsys.readouterr().out
    assert "killed    resume at high water  (" in out
    assert "survived  resume at high water, named with a test that does not see it" in out
    assert "1 of 2 mutants killed" in out
    assert (run.ROOT / QUEUE).read_text() == before
