"""What the portability commands share: bank lookup, path containment for a trusted operator, progress."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from banks.models import Bank
from portability.paths import Location, PathNotAllowed, check_cli_write, locate
from portability.roots import portability_roots


def cli_bank(bank_id: str, *, create: bool = False, empty_if_missing: bool = False) -> Bank:
    """The bank; with ``create`` it is made on first use; with ``empty_if_missing`` a bank that was
    never written stands in as empty (a dry run creates nothing)."""
    bank = Bank.objects.active().filter(bank_id=bank_id).first()
    if bank is None and empty_if_missing:
        return Bank.never_written(bank_id)
    if bank is None and create:
        from banks.services.banks import bank_create

        return bank_create(bank_id=bank_id, actor="cli", get_existing=True)
    if bank is None:
        raise CommandError(f"Bank {bank_id!r} does not exist.")
    return bank


def cli_path(path: str, roots: list[str] | None, *, write: bool = False) -> Location:
    """Roots given with --root win; then the roots the operator configured; with neither (the
    embedded default root binds only the API and the UI), the operator at the shell is the trusted
    caller that may go uncontained (the API and the UI never may). Even then nothing writes over a
    root or the per-bank layout's own folders (a directory export there would replace every bank's
    files), and every file is opened by descriptor like everywhere else."""
    try:
        chosen = not getattr(settings, "MEMORYHUB_PORTABILITY_ROOTS_DEFAULTED", False)
        configured = [str(r) for r in portability_roots()] if chosen else []
        allowed = roots or configured
        where = locate(path, roots=allowed, allow_uncontained=True)
        if write and allowed:
            check_cli_write(where.parts)
        elif write and not where.parts:
            raise PathNotAllowed("Portability path names the file system's root; name a file", "layout")
        return where
    except PathNotAllowed as exc:
        raise CommandError(str(exc)) from None


class ProgressBar:
    def __init__(self, stream, label: str, enabled: bool = True) -> None:  # noqa: ANN001
        self.stream, self.label, self.enabled = stream, label, enabled and stream.isatty() if hasattr(
            stream, "isatty") else False

    def update(self, done: int, total: int | None) -> None:
        if not self.enabled:
            return
        if total:
            filled = int(30 * min(done, total) / total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}")
        else:
            self.stream.write(f"\r{self.label} {done}")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")


__all__ = ["ProgressBar", "cli_bank", "cli_path"]
