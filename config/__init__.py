"""The composition root: settings, URLs, the Celery app, the WSGI/ASGI entry points and ``serve``.

Nothing in the apps or in the kernel (``memoryhub``) imports from here; this package imports them.
"""

from config.celery import app as celery_app

__all__ = ["celery_app"]
