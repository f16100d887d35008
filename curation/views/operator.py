"""The operator's own settings."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from curation.forms import PreferencesForm
from curation.models import OperatorPreference
from curation.timezones import SESSION_KEY, preference_set, remember_zone


@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            preference_set(user=request.user, time_zone=form.cleaned_data["time_zone"])
            remember_zone(request, form.cleaned_data["time_zone"])
            messages.success(request, f"Dates now show in {form.cleaned_data['time_zone']}.")
            return redirect("curation:preferences")
        status = 422
    else:
        pref = OperatorPreference.objects.filter(user_id=request.user.pk or 0).first()  # 0: nobody
        form = PreferencesForm(initial={"time_zone": pref.time_zone if pref else request.session.get(SESSION_KEY,
                                                                                                     "UTC")})
        status = 200
    return render(request, "curation/preferences.html", {"form": form, "tab": "preferences"}, status=status)
