"""The tiny random models of :mod:`pyterrier_instruct.testing.models`, under the name the tests import."""
from pyterrier_instruct.testing.models import *  # noqa: F401,F403
from pyterrier_instruct.testing.models import _texts  # noqa: F401


def resave_weights(folder, delta: float = 1e-3) -> None:
    """Saves other weights over a checkpoint folder (every float tensor of its ``*.safetensors`` moved by ``delta``):
    same names and sizes, other content."""
    from pathlib import Path

    from safetensors.numpy import load_file, save_file
    for file in Path(folder).glob("*.safetensors"):
        tensors = load_file(str(file))
        save_file({k: v + v.dtype.type(delta) if v.dtype.kind == "f" else v for k, v in tensors.items()}, str(file),
                  metadata={"format": "pt"})
