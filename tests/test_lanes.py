"""The test lanes (docs/testing.md): registered markers, each test in exactly one, set from what the test uses."""
import tomllib
from pathlib import Path

import conftest

ROOT = Path(__file__).parents[1]


def test_every_lane_is_a_registered_marker_and_documented():
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    registered = {m.split(":", 1)[0] for m in markers}
    assert registered == {*conftest.LANES, "unit"}
    page = (ROOT / "docs" / "testing.md").read_text()
    assert all(f"`pytest -m {lane}`" in page for lane in registered)


def _starts_a_process():
    import subprocess
    subprocess.run(["true"])


def test_a_test_is_in_one_lane_set_from_what_it_uses(request):
    lanes = {*conftest.LANES, "unit"}
    assert [m.name for m in request.node.iter_markers() if m.name in lanes] == ["unit"]  # no fixture, no process

    class Item:  # what _lane reads of a collected test
        module = request.module

        def __init__(self, function, fixturenames=()):
            self.function, self.fixturenames = function, list(fixturenames)

    assert conftest._lane(Item(_starts_a_process)) == "tools"
    assert conftest._lane(Item(_starts_a_process, ["ray_cluster"])) == "external"
    assert conftest._lane(Item(lambda: None, ["mini", "tiny"])) == "models"
    assert conftest._lane(Item(lambda: None, ["mini"])) == "unit"


def test_a_changed_stand_in_file_fails_the_manifest(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "config.json").write_text("{}")
    (tmp_path / "models" / ".lock").write_text("")
    before = conftest._manifest(tmp_path)
    assert list(before) == ["models/config.json"]  # lock files are not content
    (tmp_path / "models" / "config.json").write_text('{"edited": 1}')
    assert conftest._manifest(tmp_path) != before


def test_workers_get_a_module_at_a_time_and_the_ray_tests_together():
    """Under ``pytest -n N`` the unit of work is a module (its module fixtures built once), except the tests on the
    session's Ray cluster: one unit across modules, so one worker runs one cluster; the units in collection order."""
    import types
    pytest = __import__("pytest")
    pytest.importorskip("xdist")
    config = types.SimpleNamespace(option=types.SimpleNamespace(loadscopereorder=True),
                                   getvalue=lambda name: ["2*popen"])
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)
    assert config.option.loadscopereorder is False and scheduler.numnodes == 2
    scope = scheduler._split_scope
    assert scope("tests/test_store.py::test_a[1]") == scope("tests/test_store.py::test_b") == "tests/test_store.py"
    assert scope("tests/test_ray.py::test_dense_scoring") == "ray"
    assert scope("tests/test_docs.py::test_block_runs[docs/scaling.md#2]") == "ray"  # the page starts a cluster
    assert scope("tests/test_docs.py::test_block_runs[docs/measures.md#1]") == "tests/test_docs.py"
