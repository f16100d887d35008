import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memoryhub.embedded import prepare_local_install

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# An entry point: a local install's folders, key and embedded server are made ready before serving
# (serve's workers are handed the server's address and start nothing).
prepare_local_install(settings)
application = get_wsgi_application()
