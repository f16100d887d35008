#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings
    from django.core.management import execute_from_command_line

    from memoryhub.embedded import prepare_local_install

    # Every command (serve among them) finds a local install's folders, key and embedded server ready.
    prepare_local_install(settings)
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
