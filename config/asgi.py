import os

from django.conf import settings
from django.core.asgi import get_asgi_application

from memoryhub.embedded import prepare_local_install

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# An entry point, as config/wsgi.py: a local install is made ready before serving.
prepare_local_install(settings)
application = get_asgi_application()
