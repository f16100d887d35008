from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from banks.models import Bank, BankRole
from banks.services.audit import audit_record
from banks.services.memberships import membership_set


class Command(BaseCommand):
    help = "Create a curation operator (a superuser with --superuser, else with roles on given banks)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password", help="default: a random password, printed once")
        parser.add_argument("--email", default="")
        parser.add_argument("--superuser", action="store_true", help="sees and may change every bank")
        parser.add_argument("--bank", action="append", default=[], dest="banks", help="bank id; repeat for several")
        parser.add_argument("--role", choices=[r.value for r in BankRole], default=BankRole.CURATOR)
        parser.add_argument("--if-missing", action="store_true", help="do nothing if the user exists")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = options["username"]
        if User.objects.filter(username=username).exists():
            if options["if_missing"]:
                self.stdout.write(f"Operator {username!r} already exists.")
                return
            raise CommandError(f"Operator {username!r} already exists.")
        password = options["password"] or secrets.token_urlsafe(12)
        with transaction.atomic():
            if options["superuser"]:
                user = User.objects.create_superuser(username=username, email=options["email"], password=password)
            else:
                user = User.objects.create_user(username=username, email=options["email"], password=password)
            for bank_id in options["banks"]:
                bank = Bank.objects.active().filter(bank_id=bank_id).first()
                if bank is None:
                    raise CommandError(f"Bank {bank_id!r} does not exist.")
                membership_set(user=user, bank=bank, role=options["role"], actor="cli")
            audit_record(actor="cli", action="operator.create", target_ids=[username],
                         details={"superuser": options["superuser"], "banks": options["banks"],
                                  "role": options["role"]})
        self.stdout.write(f"Created operator {username!r}" + ("" if options["password"] else f" with password {password}"))
