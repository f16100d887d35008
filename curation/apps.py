from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "curation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from curation.login_guard import count_failed_login
        from curation.timezones import load_zone_on_login

        user_logged_in.connect(load_zone_on_login, dispatch_uid="curation-load-zone")
        user_login_failed.connect(count_failed_login, dispatch_uid="curation-count-failed-login")
