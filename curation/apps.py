from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from curation.timezones import load_zone_on_login

        user_logged_in.connect(load_zone_on_login, dispatch_uid="curation-load-zone")
