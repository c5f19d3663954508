"""Past one machine: a transformer's heavy stage on a Ray cluster (``pip install 'pyterrier-instruct[ray]'``).

:func:`on_ray` wraps; :mod:`.blocks` cuts frames into query-aligned blocks; :mod:`.worker` is the Ray actor;
:mod:`.dense` encodes a corpus sharded and resumable; :mod:`.cluster` connects or starts a local cluster (127.0.0.1).
Ray is imported when a wrapper first runs.
"""
from .cluster import connect, local_cluster
from .on_ray import OnRay, on_ray

__all__ = ["on_ray", "OnRay", "connect", "local_cluster"]
