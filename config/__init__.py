import os

# One OpenBLAS thread: numpy's BLAS (the USE embedder) otherwise spins a second thread that fights onnxruntime's
# MiniLM threads and the web threads for 2 cores; measured for a one-query USE embedding: p50 32 ms / p95 232 ms
# with 2 threads against 8 ms / 20 ms with 1 (bench/results/knowledge.md). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# Load the Celery app with Django so @shared_task binds to it (a no-op cost when no broker is configured).
from config.celery import app as celery_app  # noqa: E402

__all__ = ("celery_app",)
