"""Value equality for configured objects (transformers, backends, models): equal when of the same class with equal
``_eq_key()``. Equality feeds ``pt.Experiment(plan='tree')`` prefix sharing (PYTERRIER_NOTES §2)."""
from __future__ import annotations


class KeyedEquality:
    def _eq_key(self) -> tuple:
        return ()

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other._eq_key() == self._eq_key()

    def __hash__(self) -> int:
        return hash((type(self).__name__,) + self._eq_key())
