import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from memoryhub.embedded import prepare_local_install

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Under ASGI, Django runs each request's queries on a thread of that request's own (asgiref's
# ThreadSensitiveContext), so a connection kept for reuse past the request is never used again and stays
# open until the garbage collector finds it: one database session per request, piling up. Closed at each
# request's end instead, as Django advises for ASGI (an explicit MEMORYHUB_DB_CONN_MAX_AGE still wins).
# Before the settings are read: prepare_local_install below reads them.
os.environ.setdefault("MEMORYHUB_DB_CONN_MAX_AGE", "0")
# An entry point, as config/wsgi.py: a local install is made ready before serving.
prepare_local_install(settings)
application = get_asgi_application()
