"""Run all of MemoryHub on one machine: database, migrations, web server, Celery worker and beat, MCP.

The web server is gunicorn (workers sized to the cores and where the database runs) unless ``--dev`` (or
MEMORYHUB_DEV=1) asks for Django's reloading development server. Every child
runs under config.supervisor: one that dies is logged and started again
with backoff, and so is the embedded PostgreSQL. Ctrl-C or SIGTERM stops the
children (web first, database last) and the command returns.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection

from config.celery import sweep_queue
from config.supervisor import Backoff, CallbackService, ProcessService, Service, Supervisor
from memoryhub.embedded import (
    embedded_database_pid,
    release_embedded_database,
    restart_embedded_database,
    started_here,
)
from memoryhub.env import env_bool, env_float, env_int, env_str
from portability.roots import portability_roots

# Request line, status, bytes, duration: enough to spot slow routes in the access log; and the request's
# X-Request-ID, as the application's own lines of that request carry it (memoryhub.logs).
ACCESS_LOG_FORMAT = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms [%({x-request-id}o)s]'
# Behind the front gunicorn's peer is its socket: the client is the address the front forwards.
FRONT_ACCESS_LOG_FORMAT = '%({x-forwarded-for}i)s "%(r)s" %(s)s %(b)s %(M)sms [%({x-request-id}o)s]'


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def default_web_workers(cores: int, *, database_here: bool) -> int:
    """Sync web workers for ``cores`` cores.

    Where the database runs elsewhere, a worker waiting on it leaves its core to another: gunicorn's
    usual 2 × cores + 1. The embedded database shares the cores, and a request's time is nearly all CPU
    (embedding, Python, the statements' own work): extra workers only contend. 30 clients, two cores,
    MiniLM (``bench/load_bench.py --memories 3000 --seconds 60 --warmup 30``): 5 workers 83.1 req/s at
    23.2 ms of CPU a request, 4 workers 85.0 at 22.6, 3 workers 91.3 / 91.8 at 20.8 / 20.7, 2 workers
    91.9 at 19.3 with the cores no longer full. So cores + 1 there.
    """
    return cores + 1 if database_here else 2 * cores + 1


def gunicorn_command(addr: str, *, workers: int, threads: int, timeout: int, app: str = "config.wsgi") -> list[str]:
    """Sync workers unless threads are asked for.

    A sync worker takes a connection from the listening socket only when it is free, so the kernel's
    accept queue is one line that every worker serves in turn. With threaded workers each process
    accepts while busy and keeps its keep-alive clients: on this machine's load bench (30 clients,
    two cores) some clients got eight times the service of others and recall p95 was 331 ms, against
    133 ms with sync workers at higher throughput. Threads still pay where requests wait on I/O (a
    remote embeddings API); ``MEMORYHUB_WEB_THREADS`` above 1 selects them.
    """
    worker = ["--worker-class", "sync"] if threads <= 1 else ["--worker-class", "gthread", "--threads", str(threads)]
    return [
        sys.executable, "-m", "gunicorn", app,
        "--config", "python:config.gunicorn_config",
        "--bind", addr,
        "--workers", str(workers),
        *worker,
        # A sync worker silent this long is replaced: a stuck request. Transfers that keep moving say
        # so (memoryhub.liveness) and are not cut.
        "--timeout", str(timeout), "--graceful-timeout", "30", "--keep-alive", "5",
        # Recycle workers now and then so a slow leak can never grow without bound.
        "--max-requests", "5000", "--max-requests-jitter", "500",
        "--access-logfile", "-",
        "--access-logformat", FRONT_ACCESS_LOG_FORMAT if addr.startswith("unix:") else ACCESS_LOG_FORMAT,
        # Its default control socket is one path per user: two servers on a machine would fight over it.
        "--no-control-socket",
    ]


def web_socket() -> Path:
    """gunicorn's Unix socket behind the front, in a directory only this user can enter."""
    run = Path(settings.VAR_DIR) / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    run.chmod(0o700)
    return run / "web.sock"


def front_command(addr: str, upstream: Path) -> list[str]:
    """The buffering front on the public address (config.front)."""
    spool = Path(settings.VAR_DIR) / "run" / "spool"
    spool.mkdir(mode=0o700, exist_ok=True)
    return [sys.executable, "-m", "config.front", "--bind", addr, "--upstream", str(upstream),
            "--max-body", str(max(settings.MEMORYHUB_MAX_REQUEST_BYTES, settings.MEMORYHUB_MAX_UPLOAD_BYTES)
                              + 1024 * 1024),
            "--idle-timeout", str(env_float("MEMORYHUB_FRONT_IDLE_TIMEOUT", 60.0)), "--spool-dir", str(spool),
            "--head-timeout", str(env_float("MEMORYHUB_FRONT_HEAD_TIMEOUT", 30.0)),
            "--forwarded-allow-ips", env_str("MEMORYHUB_FORWARDED_ALLOW_IPS")]


class Command(BaseCommand):
    help = ("Start MemoryHub: migrate, create the first operator, then run and supervise the web server "
            "(gunicorn, or the development server with --dev), a Celery worker and beat, and the MCP endpoint.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--addr", default=env_str("MEMORYHUB_ADDR", "127.0.0.1:8000"))
        parser.add_argument("--dev", action="store_true", default=env_bool("MEMORYHUB_DEV", False),
                            help="Django's development server, reloading on code changes (MEMORYHUB_DEV=1)")
        parser.add_argument("--web-workers", type=int,
                            default=env_int("MEMORYHUB_WEB_WORKERS", default_web_workers(
                                available_cores(), database_here=settings.EMBEDDED_DATABASE)),
                            help="gunicorn processes (default: cores + 1 beside the embedded database, "
                                 "2 x cores + 1 with DATABASE_URL)")
        parser.add_argument("--web-threads", type=int, default=env_int("MEMORYHUB_WEB_THREADS", 1),
                            help="threads per web worker; 1 (the default) serves with sync workers")
        parser.add_argument("--web-timeout", type=int, default=env_int("MEMORYHUB_WEB_TIMEOUT", 120),
                            help="seconds before gunicorn kills a worker stuck on one request")
        parser.add_argument("--no-front", action="store_true", default=not env_bool("MEMORYHUB_WEB_FRONT", True),
                            help="expose gunicorn itself on --addr, without the buffering front "
                                 "(MEMORYHUB_WEB_FRONT=0; only behind a proxy that buffers requests, e.g. nginx)")
        parser.add_argument("--no-worker", action="store_true", help="do not start a Celery worker")
        parser.add_argument("--no-beat", action="store_true", help="do not start Celery beat (periodic tasks)")
        parser.add_argument("--no-mcp", action="store_true", help="do not start the MCP endpoint")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write("Applying migrations...")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("createcachetable", verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        self._first_operator(options["addr"])
        self._announce_roots()
        connection.close()

        supervisor = Supervisor(
            self._services(options),
            backoff=Backoff(initial=env_float("MEMORYHUB_RESTART_DELAY", 1.0),
                            maximum=env_float("MEMORYHUB_RESTART_MAX_DELAY", 60.0)),
        )
        stopping = False

        def stop(signum: int, frame: object) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        supervisor.start_all()
        server = "development server" if options["dev"] else (
            f"gunicorn, {options['web_workers']} workers" if options["web_threads"] <= 1
            else f"gunicorn, {options['web_workers']} workers of {options['web_threads']} threads")
        if not options["dev"] and not options["no_front"]:
            server += ", behind the buffering front"
        self.stdout.write(self.style.SUCCESS(
            f"MemoryHub is up: http://{options['addr']}/  ({server}; Ctrl-C stops it)"), ending="\n")
        self.stdout.flush()
        try:
            supervisor.run(lambda: stopping)
        finally:
            self.stdout.write("Stopping MemoryHub...")
            supervisor.stop_all()
            self.stdout.write("MemoryHub stopped.")

    def _services(self, options: dict[str, Any]) -> list[Service]:
        env = dict(os.environ)
        # The system checks ran once in this process; the children would only print them again.
        env["CELERY_SKIP_CHECKS"] = "1"
        services: list[Service] = []
        # manage.py started the embedded server in this process (prepare_local_install): supervise it.
        if settings.EMBEDDED_DATABASE and started_here(settings.EMBEDDED_PGDATA):
            data_dir = settings.EMBEDDED_PGDATA
            # Children reuse this process's embedded server instead of each starting one.
            env["MEMORYHUB_EMBEDDED_DATABASE_URL"] = settings.MEMORYHUB_DATABASE_URL
            env.setdefault("SECRET_KEY", settings.SECRET_KEY)
            services.append(CallbackService(
                "postgresql", start=lambda: restart_embedded_database(data_dir),
                alive=lambda: embedded_database_pid(data_dir) is not None,
                stop=lambda: release_embedded_database(data_dir),
                pid=lambda: embedded_database_pid(data_dir), layer=0,
            ))
        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        celery = [sys.executable, "-m", "celery", "-A", "config"]
        if not options["no_worker"]:
            queue = settings.CELERY_TASK_DEFAULT_QUEUE
            services.append(ProcessService("worker", [
                *celery, "worker", "--loglevel", "INFO", "-Q", queue, "-n", f"{queue}@%h",
                "--concurrency", env_str("MEMORYHUB_WORKER_CONCURRENCY", "2")], env=env, cwd=settings.BASE_DIR))
            # The job sweep's own worker: one process, so dead jobs are found and resumed while every
            # worker above is busy with long jobs.
            services.append(ProcessService("sweeper", [
                *celery, "worker", "--loglevel", "INFO", "-Q", sweep_queue(queue), "-n", f"{sweep_queue(queue)}@%h",
                "--pool", "solo", "--without-gossip", "--without-mingle"], env=env, cwd=settings.BASE_DIR))
        if not options["no_beat"]:
            services.append(ProcessService("beat", [*celery, "beat", "--loglevel", "INFO"],
                                           env=env, cwd=settings.BASE_DIR))
        if not options["no_mcp"]:
            services.append(ProcessService("mcp", [*manage, "serve_mcp", "--skip-checks"], env=env,
                                           cwd=settings.BASE_DIR))
        if options["dev"]:
            web = [*manage, "runserver", options["addr"], "--skip-checks"]
        else:
            bind = options["addr"] if options["no_front"] else f"unix:{web_socket()}"
            web = gunicorn_command(bind, workers=max(1, options["web_workers"]),
                                   threads=max(1, options["web_threads"]), timeout=options["web_timeout"])
            if not options["no_front"]:
                # Started after gunicorn (same layer, list order) and stopped with it.
                services.append(ProcessService("web", web, env=env, cwd=settings.BASE_DIR))
                services.append(ProcessService("front", front_command(options["addr"], web_socket()), env=env,
                                               cwd=settings.BASE_DIR))
                return services
        services.append(ProcessService("web", web, env=env, cwd=settings.BASE_DIR))
        return services

    def _announce_roots(self) -> None:
        roots = portability_roots()
        if roots:
            self.stdout.write("Import/export files live in: " + ", ".join(str(r) for r in roots))
        else:
            self.stdout.write("No portability roots: file import/export is off (set MEMORYHUB_PORTABILITY_ROOTS).")

    def _first_operator(self, addr: str) -> None:
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write(f"Log in at http://{addr}/login/ with your operator account.")
            return
        username = env_str("MEMORYHUB_ADMIN_USER", "admin")
        password = env_str("MEMORYHUB_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        self.stdout.write(self.style.SUCCESS(
            f"Created the first operator. Log in at http://{addr}/login/ as {username!r} with password {password!r}"
        ))
