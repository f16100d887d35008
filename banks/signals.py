"""Signals the domain sends to the apps built on it, so those apps react without the domain importing them.

``bank_hidden``: a bank was hidden on its way to deletion, sent after the commit, with ``bank_id`` (the
string id) and ``at`` (when). Portability sets the bank's files aside on it (portability/apps.py), so
a new bank of the same id finds none of them; banks itself knows nothing of files.
"""

from __future__ import annotations

from django.dispatch import Signal

bank_hidden = Signal()
