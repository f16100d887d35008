from datetime import datetime

from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "portability"

    def ready(self) -> None:
        from banks.signals import bank_hidden
        from portability import checks  # noqa: F401  (registers the system checks)

        bank_hidden.connect(_bank_files_set_aside, dispatch_uid="portability.bank_files_set_aside")


def _bank_files_set_aside(sender: object, *, bank_id: str, at: datetime, **kwargs: object) -> None:
    """A hidden bank's folder in every root moves to the trash (portability/paths/trash.py)."""
    from portability.paths.trash import bank_folder_set_aside
    from portability.roots import portability_roots

    bank_folder_set_aside(portability_roots(), bank_id, at)
