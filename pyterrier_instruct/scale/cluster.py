"""Connecting to a Ray cluster, or starting a local one that listens on the loopback interface only.

``connect(address)``: an initialised Ray is used as it is; an ``address`` (``"auto"``, ``"ray://…"``, ``"host:port"``)
or ``$RAY_ADDRESS`` joins that cluster; otherwise a local single-machine cluster starts, bound to 127.0.0.1 (every Ray
process, the GCS included, listens on the loopback address only; no dashboard, no usage statistics).

Ray turns a node address of ``127.0.0.1`` into the machine's routable address unless
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` is ``0`` (the setting that makes Ray local-only on Windows and macOS), so
:func:`local_cluster` sets it for the start.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys
from typing import Optional

from .._optional import require

LOOPBACK = "127.0.0.1"
_LOCAL_ONLY = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def ray_module():
    """``import ray``, or the ImportError naming ``pip install 'pyterrier-instruct[ray]'``."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return require("ray", "ray")


@contextlib.contextmanager
def _local_only():
    """Ray's node address stays 127.0.0.1 inside the block (read by ``ray.init`` when it starts the node processes)."""
    before = os.environ.get(_LOCAL_ONLY)
    os.environ[_LOCAL_ONLY] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    flag = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if constants is not None:  # ray was imported before: its constant was read at import time
        constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if before is None:
            del os.environ[_LOCAL_ONLY]
        else:
            os.environ[_LOCAL_ONLY] = before
        if constants is not None:
            constants.ENABLE_RAY_CLUSTER = flag


def local_cluster(num_cpus: Optional[int] = None, num_gpus: Optional[int] = None, **init_kwargs):
    """Starts a Ray cluster on this machine that listens on 127.0.0.1 only (no dashboard, no usage statistics) and
    returns ``ray.init``'s context. ``num_cpus``/``num_gpus``: the resources it offers (default: the machine's)."""
    ray = ray_module()
    if ray.is_initialized():
        raise RuntimeError("Ray is already initialised in this process; ray.shutdown() first, or use it as it is")
    with _local_only():
        context = ray.init(num_cpus=num_cpus, num_gpus=num_gpus, _node_ip_address=LOOPBACK, include_dashboard=False,
                           log_to_driver=init_kwargs.pop("log_to_driver", False), **init_kwargs)
    node = ray.util.get_node_ip_address()
    if node != LOOPBACK:  # a Ray that ignores the setting must not be left listening on a routable address
        ray.shutdown()
        raise RuntimeError(f"Ray started on {node}, not on {LOOPBACK}; refusing a local cluster reachable from the "
                           "network")
    return context


def connect(address: Optional[str] = None):
    """The Ray cluster to run on: the initialised one; else ``address`` or ``$RAY_ADDRESS``; else a new
    :func:`local_cluster`. Returns the ``ray`` module."""
    ray = ray_module()
    if ray.is_initialized():
        return ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        local_cluster()
    else:
        ray.init(address=address, log_to_driver=False)
    return ray


def cluster_gpus() -> float:
    """GPUs the connected cluster offers (0 on a CPU-only cluster)."""
    import ray
    return float(ray.cluster_resources().get("GPU", 0))


def cluster_cpus() -> float:
    import ray
    return float(ray.cluster_resources().get("CPU", 0))


def worker_identity() -> str:
    """Where this code runs, for error messages: the actor, the process, the host, its node address and node id."""
    import ray
    context = ray.get_runtime_context()
    actor = context.get_actor_id() or "-"
    return (f"Ray worker actor {actor} (pid {os.getpid()}) on host {socket.gethostname()} "
            f"(node {ray.util.get_node_ip_address()}, id {context.get_node_id()[:12]})")
