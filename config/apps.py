from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """Installed for its management command (``serve``), which starts the whole project."""

    name = "config"
    verbose_name = "MemoryHub"
