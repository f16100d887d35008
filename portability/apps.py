from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "portability"

    def ready(self) -> None:
        from portability import checks  # noqa: F401  (registers the system checks)
