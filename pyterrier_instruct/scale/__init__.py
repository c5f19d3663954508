"""Past one machine: a transformer's heavy stage on a Ray cluster (``pip install 'pyterrier-instruct[ray]'``).

- :func:`on_ray` (:mod:`.on_ray`): the wrapper, a ``pt.Transformer`` with the wrapped transformer's output;
- :mod:`.blocks`: how frames are cut into query-aligned (pointwise: length-sorted) blocks;
- :mod:`.worker`: the Ray Data actor (one model per actor, the model-path check, counters sent back);
- :mod:`.dense`: sharded, resumable corpus encoding into an ``EmbeddingIndex`` (or any index fed ``doc_vec``);
- :mod:`.cluster`: connecting, or starting a local cluster that listens on 127.0.0.1 only.

Ray is imported when a wrapper first runs, not when this package is imported.
"""
from .cluster import connect, local_cluster
from .on_ray import OnRay, on_ray

__all__ = ["on_ray", "OnRay", "connect", "local_cluster"]
