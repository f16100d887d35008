"""The kernel every app may import: configuration readers, errors, input rules, the task queue, the
PostgreSQL backend and its helpers. It imports no app and nothing of the composition root (``config``)."""

import os

# Embedding a query is a handful of small matrix products: handing them to a BLAS thread pool
# costs more than it saves, and web and worker processes already run side by side.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
