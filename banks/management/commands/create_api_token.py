from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from banks.services.tokens import token_create
from memoryhub.errors import MemoryHubError


class Command(BaseCommand):
    help = "Create an API token for some banks; the secret is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--name", required=True, help="what the token is for")
        parser.add_argument("--bank", action="append", required=True, dest="banks",
                            help="bank id or glob (user-*); repeat for several")
        parser.add_argument("--permissions", default="read,write",
                            help="comma list of read, write, forget, admin, or * (default: read,write)")
        parser.add_argument("--principal", default="",
                            help="who calls with it (user:alice, agent:triage); stamped on what it retains")
        parser.add_argument("--expires-days", type=int, default=None, help="expire after this many days")

    def handle(self, *args: Any, **options: Any) -> None:
        perms = [p for p in options["permissions"].split(",") if p.strip()]
        expires = timezone.now() + timedelta(days=options["expires_days"]) if options["expires_days"] else None
        try:
            token, secret = token_create(
                name=options["name"], grants=[{"bank": b, "permissions": perms} for b in options["banks"]],
                actor="cli", expires_at=expires, principal=options["principal"],
            )
        except MemoryHubError as exc:
            raise CommandError(exc.message) from None
        self.stderr.write(f"Created token {token.prefix} ({token.name}); store the secret now, it is not shown again:")
        self.stdout.write(secret)
