"""Times typed in operator pages follow the API's rule: read as UTC, refused when no reader can show them."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("field", "value"), [
    ("from", "0001-01-01T00:00:00+14:00"),
    ("to", "9999-12-31T23:59:59-12:00"),
    ("to", "2024-01-01T00:00:00+23:00"),
    ("from", "next tuesday"),
])
def test_time_travel_refuses_times_out_of_range_with_a_page(admin_client, bank, field, value):
    response = admin_client.get(f"/banks/{bank.bank_id}/time/", {field: value, "q": "jazz"})
    assert response.status_code == 400
    assert field in response.content.decode()


def test_time_travel_reads_offsets_as_utc(admin_client, bank):
    response = admin_client.get(f"/banks/{bank.bank_id}/time/", {"from": "2024-03-01T09:00:00+05:30",
                                                                  "to": "2024-03-02"})
    assert response.status_code == 200
    assert response.context["a"].isoformat() == "2024-03-01T03:30:00+00:00"
