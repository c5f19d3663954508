"""Identity of configured objects (transformers, backends, models), derived from the constructor.

:class:`Configured`: ``repr`` is the call that built the object (constructor or :func:`preset` classmethod);
``==``/``hash`` compare the class and the resolved constructor arguments read back from the attributes of the same
names (``verbose`` left out), which feeds ``pt.Experiment(plan='tree')``; the same arguments with the model revisions
are the fingerprint caches key on; pickling drops the ``_lazy`` attributes (weights reload on first use); a wrapper
that does not change the output (``pti.on_ray``) names what it wraps in ``_same_output_as`` and shares its fingerprint.
"""
from __future__ import annotations

import functools
import inspect
from typing import Dict, Tuple

class preset:
    """Marks a classmethod building a configured instance: the instance's ``repr`` reads ``Class.method(...)``.

    A preset belongs to the class that defines it: reached through a subclass (``Qwen3Reranker.gritlm()`` from
    ``CausalLMReranker.gritlm``) it is an ``AttributeError`` naming the class to call, never an instance that mixes
    one family's checkpoint with another's prompt."""

    def __init__(self, method):
        self.method, self.owner = method, None
        functools.update_wrapper(self, method)

    def __set_name__(self, owner, name):
        self.owner = owner

    def __get__(self, obj, cls=None):
        cls = type(obj) if cls is None else cls
        method = self.method
        if self.owner is not None and cls is not self.owner:
            raise AttributeError(f"{cls.__name__}.{method.__name__}() is a preset of {self.owner.__name__}, not of "
                                 f"{cls.__name__}: call {self.owner.__name__}.{method.__name__}(...), or one of "
                                 f"{cls.__name__}'s own presets")

        @functools.wraps(method)
        def build(*args, **kwargs):
            built = method(cls, *args, **kwargs)
            built.__dict__["_call"] = (f"{cls.__name__}.{method.__name__}", args, kwargs)
            return built
        return build


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


@functools.lru_cache(maxsize=None)
def _constructor(cls) -> Tuple[inspect.Parameter, ...]:
    """The constructor's parameters along the MRO (subclass first), following ``**kwargs`` into base classes (whose
    parameters it forwards, keyword-only)."""
    params: Dict[str, inspect.Parameter] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or not issubclass(klass, Configured):
            continue
        own = list(inspect.signature(init).parameters.values())[1:]
        for p in own:
            if p.kind not in _VARIADIC and p.name not in params:
                params[p.name] = p if not params else p.replace(kind=p.KEYWORD_ONLY)
        if not any(p.kind == p.VAR_KEYWORD for p in own):
            break
    return tuple(params.values())


def _parameters(cls) -> Tuple[str, ...]:
    """Constructor parameter names along the MRO (subclass first), following ``**kwargs`` into base classes."""
    return tuple(p.name for p in _constructor(cls))


def _hashable(value):
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


class constructor_signature:
    """``__signature__ = constructor_signature()`` in the body of a class that is not :class:`Configured`:
    ``inspect.signature(cls)``, ``help`` and Sphinx show its ``__init__``'s parameters, not ``pt.Transformer.__new__``'s
    ``(*args, **kwargs)``; an instance has none (a transformer's call signature stays its own)."""

    def __get__(self, obj, cls) -> inspect.Signature:
        if obj is not None:
            raise AttributeError("__signature__")
        init = inspect.signature(cls.__init__)
        return init.replace(parameters=list(init.parameters.values())[1:])


class _ConfiguredType(type):
    """The metaclass of :class:`Configured`: a call records itself on the instance before ``__init__`` runs (the
    ``repr``); ``__signature__`` is the constructor's, base classes' parameters included (so Sphinx does not show
    ``pt.Transformer.__new__``'s ``(*args, **kwargs)``); ``dir(cls)`` leaves out the presets ``cls`` refuses (those of
    a base class, which raise ``AttributeError`` through a subclass), so ``help(Qwen3Reranker)``, tab completion and
    Sphinx list only the presets that work for the class."""

    def __call__(cls, *args, **kwargs):
        self = cls.__new__(cls, *args, **kwargs)
        self.__dict__["_call"] = (cls.__name__, args, kwargs)
        self.__init__(*args, **kwargs)
        return self

    @property
    def __signature__(cls) -> inspect.Signature:
        """:func:`_constructor` less the parameters a base class requires (a subclass forwarding ``**kwargs`` supplies
        those itself, e.g. FollowIR7B's ``template``)."""
        own = inspect.signature(cls.__init__).parameters
        shown = [p for p in _constructor(cls) if p.name in own or p.default is not p.empty]
        return inspect.Signature(sorted(shown, key=lambda p: p.kind))

    def __dir__(cls):
        refused = {name for klass in cls.__mro__[1:] for name, value in vars(klass).items()
                   if isinstance(value, preset) and value.owner is not cls}
        own = {name for name, value in vars(cls).items() if isinstance(value, preset)}
        return sorted(n for n in super().__dir__() if n not in refused or n in own)


class Configured(metaclass=_ConfiguredType):
    """Mixin giving ``repr``/``==``/``hash``/pickling from the constructor (see the module docstring)."""
    _eq_exclude: Tuple[str, ...] = ("verbose",)
    #: constructor arguments that never change the output (besides ``verbose``), left out of the fingerprint
    _fingerprint_exclude: Tuple[str, ...] = ()
    _lazy: Tuple[str, ...] = ()

    def config(self) -> Dict[str, object]:
        """The resolved constructor arguments (every parameter stored under its own name), in signature order."""
        return {n: getattr(self, n) for n in _parameters(type(self)) if hasattr(self, n)}

    def _eq_key(self) -> tuple:
        return tuple((k, v) for k, v in self.config().items() if k not in self._eq_exclude)

    def _fingerprint_parts(self) -> Dict[str, object]:
        """What :func:`~pyterrier_instruct._fingerprint.fingerprint` describes: the resolved constructor arguments
        (``verbose`` left out). A class that does not keep every argument under its own name, or whose output depends
        on more (an index, a dataset), overrides this."""
        from ._fingerprint import NotFingerprintable
        config = self.config()
        missing = [n for n in _parameters(type(self)) if n not in config and n not in self._fingerprint_exclude]
        if missing:
            raise NotFingerprintable(repr(self), f"{type(self).__name__} does not keep its argument(s) {missing}")
        return {k: v for k, v in config.items() if k not in self._eq_exclude + self._fingerprint_exclude}

    def _fingerprint_(self) -> str:
        """:func:`~pyterrier_instruct._fingerprint.fingerprint`'s protocol: the class and :meth:`_fingerprint_parts`."""
        from ._fingerprint import describe
        return describe(self, self._fingerprint_parts())

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return other._eq_key() == self._eq_key()

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, _hashable(self._eq_key())))

    def __repr__(self) -> str:
        call = self.__dict__.get("_call", (type(self).__name__, (), {}))
        if isinstance(call, str):  # unpickled: the text of the call
            return call
        name, args, kwargs = call
        return f"{name}({', '.join([repr(a) for a in args] + [f'{k}={v!r}' for k, v in kwargs.items()])})"

    def __getstate__(self):
        state = self.__dict__.copy()
        if "_call" in state:  # keep the text of the call, not its arguments (a corpus iterator does not pickle)
            state["_call"] = Configured.__repr__(self)
        for name in self._lazy:
            if name in state:
                state[name] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def subtransformers(self):
        """A configured model is one stage, not a pipeline: ``pt.inspect`` does not descend into its arguments."""
        return {}
