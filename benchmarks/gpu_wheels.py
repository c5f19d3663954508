"""The wheels ``benchmarks/gpu_pointwise.py`` needs on a GPU machine without network that has Python 3.12, torch,
transformers and pandas: downloaded here, installed there (only those the machine lacks, into a side folder).

The list is what the benchmark's transformers path imports beyond torch, transformers and pandas (and their own
requirements), found by running ``gpu_pointwise.py --tiny`` in an environment holding only those three and adding each
module it failed to import: PyTerrier's core (``pyterrier`` and the modules it imports at start: ir_datasets,
ir_measures, Deprecated/wrapt, more-itertools, lz4, requests with urllib3, certifi and charset-normalizer) and, for the
tokenizers the models are built with offline (``tests/tiny_models.py``), sentencepiece and protobuf. pyterrier-pisa,
pyarrow, scipy, nltk and the package's other requirements are not imported on that path. About 5 MiB of cp312 wheels.

Usage::

    python benchmarks/gpu_wheels.py download            # here, with network: cp312 manylinux wheels into .whl/
    python benchmarks/gpu_wheels.py install             # there: the ones the machine lacks, into .whl/site
"""
from __future__ import annotations

import argparse
import importlib.metadata
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import List, Sequence

#: NAME==VERSION of every distribution the benchmark needs beyond torch, transformers and pandas
WHEELS = ("pyterrier==1.1.2", "ir_datasets==0.6.3", "ir_measures==0.4.3", "Deprecated==1.3.1", "wrapt==2.5.2",
          "more-itertools==11.2.1", "lz4==4.4.5", "requests==2.34.2", "urllib3==2.8.0", "certifi==2026.10.19.post1",
          "charset-normalizer==3.5.3",
          "sentencepiece==0.2.3", "protobuf==7.36.2")
#: the target: CPython 3.12 on x86-64 Linux
PLATFORM = ("--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
            "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64")


def _name(pin: str) -> str:
    return pin.split("==")[0]


def _key(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def missing(pins: Sequence[str] = WHEELS) -> List[str]:
    """The pins whose distribution this Python does not have, at any version."""
    out = []
    for pin in pins:
        try:
            importlib.metadata.distribution(_name(pin))
        except importlib.metadata.PackageNotFoundError:
            out.append(pin)
    return out


def download(folder: Path, pins: Sequence[str] = WHEELS) -> None:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", *PLATFORM, "-d",
                    str(folder), *pins],
                   check=True)


def wheel_of(folder: Path, pin: str) -> Path:
    """The wheel of ``pin`` in ``folder``; FileNotFoundError naming the download command when it is not there."""
    name, version = pin.split("==")
    found = [w for w in folder.glob("*.whl") if _key(w.name.split("-")[0]) == _key(name)
             and w.name.split("-")[1] == version]
    if not found:
        raise FileNotFoundError(f"no wheel of {pin} in {folder}: run `python benchmarks/gpu_wheels.py download` where "
                                f"there is network, and bring {folder}/ along")
    return found[0]


def install(folder: Path, site: Path, pins: Sequence[str] = WHEELS) -> List[str]:
    """Unpacks the wheels of the pins this Python lacks into ``site`` (put it on PYTHONPATH); returns those pins.
    A wheel is a zip laid out for site-packages: unpacking is what installing it does for these (no scripts, no
    compiled bytecode needed), so neither pip nor network is needed there."""
    todo = missing(pins)
    wheels = [wheel_of(folder, pin) for pin in todo]
    site.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return todo


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["download", "install", "missing"])
    parser.add_argument("--wheels", default=".whl", help="the folder of the wheels")
    parser.add_argument("--site", default=None, help="where install unpacks them (default: <wheels>/site)")
    args = parser.parse_args(argv)
    folder = Path(args.wheels)
    if args.command == "download":
        download(folder)
    elif args.command == "missing":
        print("\n".join(missing()))
    else:
        done = install(folder, Path(args.site) if args.site else folder / "site")
        print(f"installed {', '.join(done)}" if done else "nothing to install: every package the benchmark needs is "
                                                          "here", file=sys.stderr)


if __name__ == "__main__":
    main()
