"""The tiny random models of :mod:`pyterrier_instruct.testing.models`, under the name the tests import."""
from pyterrier_instruct.testing.models import *  # noqa: F401,F403
from pyterrier_instruct.testing.models import _texts  # noqa: F401
