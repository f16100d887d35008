import os

# Embedding a query is a handful of small matrix products: handing them to a BLAS thread pool
# costs more than it saves, and web and worker processes already run side by side.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from memoryhub.celery import app as celery_app  # noqa: E402

__all__ = ["celery_app"]
