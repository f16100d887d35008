"""Run all of MemoryHub on one machine: database, migrations, worker, web server.

With DATABASE_URL unset the embedded PostgreSQL stays up for as long as this
command runs and stops when it exits. The Celery worker and the web server
are child processes; Ctrl-C (or SIGTERM) stops all of them cleanly.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection


class Command(BaseCommand):
    help = "Start MemoryHub: migrate, create the first operator, run a Celery worker and the web server."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default=os.environ.get("MEMORYHUB_ADDR", "127.0.0.1:8000"))
        parser.add_argument("--no-worker", action="store_true", help="do not start a Celery worker")
        parser.add_argument("--gunicorn", action="store_true", help="serve with gunicorn instead of runserver")
        parser.add_argument("--no-mcp", action="store_true", help="do not start the MCP endpoint")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write("Applying migrations...")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        self._first_operator(options["addr"])
        env = dict(os.environ)
        if settings.EMBEDDED_DATABASE:
            # Children reuse this process's embedded server instead of each starting one.
            env["MEMORYHUB_EMBEDDED_DATABASE_URL"] = settings.MEMORYHUB_DATABASE_URL
            env.setdefault("SECRET_KEY", settings.SECRET_KEY)
        connection.close()
        children: list[subprocess.Popen[bytes]] = []
        if not options["no_worker"]:
            children.append(subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--loglevel", "INFO",
                 "--concurrency", os.environ.get("MEMORYHUB_WORKER_CONCURRENCY", "2")],
                env=env,
            ))
        if options["gunicorn"]:
            web = [sys.executable, "-m", "gunicorn", "memoryhub.wsgi", "--bind", options["addr"], "--workers", "2",
                   "--timeout", "120"]
        else:
            web = [sys.executable, "manage.py", "runserver", options["addr"], "--noreload"]
        children.append(subprocess.Popen(web, env=env, cwd=settings.BASE_DIR))
        if not options["no_mcp"]:
            children.append(subprocess.Popen([sys.executable, "manage.py", "serve_mcp"], env=env,
                                             cwd=settings.BASE_DIR))
        self.stdout.write(self.style.SUCCESS(f"MemoryHub is up: http://{options['addr']}/  (Ctrl-C stops it)"))
        self._wait(children)

    def _first_operator(self, addr: str) -> None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write(f"Log in at http://{addr}/login/ with your operator account.")
            return
        username = os.environ.get("MEMORYHUB_ADMIN_USER", "admin")
        password = os.environ.get("MEMORYHUB_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        self.stdout.write(self.style.SUCCESS(
            f"Created the first operator. Log in at http://{addr}/login/ as {username!r} with password {password!r}"
        ))

    def _wait(self, children: list[subprocess.Popen[bytes]]) -> None:
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        try:
            while not stopping and all(child.poll() is None for child in children):
                time.sleep(0.5)
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            for child in children:
                try:
                    child.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    child.kill()
            self.stdout.write("MemoryHub stopped.")
