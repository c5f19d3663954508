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
