"""Forms for every operator change: one mechanism for parsing, validation, error display and
re-rendering a page with what the operator typed. Views hand cleaned data to the services."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import forms
from django.forms.renderers import DjangoTemplates

from banks.services.bulk import ACTIONS
from memoryhub.input_rules import UnstorableInput, utc_datetime


class CurationRenderer(DjangoTemplates):
    # Label, input, help and errors, with the input pointing at its errors (aria-describedby).
    field_template_name = "curation/forms/field.html"


class CurationForm(forms.Form):
    default_renderer = CurationRenderer()
    required_css_class = "required"

    def set_choices(self, name: str, choices: list[tuple[str, str]]) -> None:
        field = self.fields[name]
        if not isinstance(field, forms.ChoiceField):
            raise TypeError(f"{name} is not a choice field")
        field.choices = choices

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Field ids (not names) carry the form's own prefix, so several forms share a page without
        # clashing ids while the posted names stay plain.
        kwargs.setdefault("auto_id", f"{self.id_prefix}-%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    id_prefix = "f"

    def full_clean(self) -> None:
        super().full_clean()
        for name in self.errors:
            if name in self.fields:
                self.fields[name].widget.attrs["aria-describedby"] = f"{self[name].auto_id}_error"

    def error_summary(self) -> str:
        return "; ".join(f"{self.fields[k].label if k in self.fields else ''}: {' '.join(map(str, v))}".lstrip(": ")
                         for k, v in self.errors.items())


class TagsField(forms.CharField):
    """Comma separated in the page, a list for the services."""

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        raw = super().to_python(value) or ""
        return list(dict.fromkeys(t.strip() for t in raw.replace("\n", ",").split(",") if t.strip()))

    def prepare_value(self, value: Any) -> Any:
        return ", ".join(value) if isinstance(value, list | tuple) else value


class IdsField(TagsField):
    """Memory ids, one per line or comma separated."""


class MetadataField(forms.CharField):
    widget = forms.Textarea

    def to_python(self, value: Any) -> dict[str, Any] | None:  # type: ignore[override]
        raw = (super().to_python(value) or "").strip()
        if not raw:
            return None
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}. Nothing was saved."
            ) from exc
        if not isinstance(parsed, dict):
            raise forms.ValidationError("must be a JSON object, such as {\"customer_id\": \"c-1\"}.")
        return parsed

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return json.dumps(value, ensure_ascii=False, indent=1)
        return value


class RetainForm(CurationForm):
    id_prefix = "new"
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Text")
    tags = TagsField(required=False, label="Tags (comma separated)")
    fact_type = forms.CharField(required=False, label="Fact type", max_length=64,
                                widget=forms.TextInput(attrs={"placeholder": "world", "list": "fact-types"}))


class WhenField(forms.Field):
    """A date or date-time in ISO 8601, read as the API reads times: an offset is honoured, none means
    UTC, and a time no reader can show is refused, naming the range."""

    widget = forms.TextInput(attrs={"maxlength": 64, "placeholder": "2024-03-01T09:30:00+01:00"})

    def to_python(self, value: Any) -> datetime | None:
        text = str(value or "").strip()[:64]
        if not text:
            return None
        try:
            parsed = datetime.fromisoformat(text.replace(" ", "T", 1) if len(text) > 10 else text)
        except ValueError:
            raise forms.ValidationError(
                f"“{text[:40]}” is not a date: write it as 2024-03-01 or 2024-03-01T09:30:00+01:00.") from None
        try:
            return utc_datetime(parsed)
        except UnstorableInput as exc:
            raise forms.ValidationError(exc.reason) from None


class MemoryEditForm(CurationForm):
    id_prefix = "edit"
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label="Text")
    tags = TagsField(required=False, label="Tags")
    fact_type = forms.CharField(required=False, label="Fact type", max_length=64)
    metadata = MetadataField(required=False, label="Metadata (JSON object)",
                             widget=forms.Textarea(attrs={"rows": 4}))
    occurred_at = WhenField(required=False, label="Occurred (ISO 8601; no offset means UTC; empty: no date)")
    created_at = WhenField(required=False, label="Created by its source (ISO 8601; no offset means UTC)")

    def clean_created_at(self) -> datetime | None:
        # A form without the field (an older page, a script) leaves the date alone; an emptied one is refused.
        value: datetime | None = self.cleaned_data.get("created_at")
        if value is None and "created_at" in self.data:
            raise forms.ValidationError("A memory always has a creation date: write one, or leave the one it has.")
        return value
    reason = forms.CharField(required=False, label="Why (for the audit log)", max_length=2000)


class ForgetForm(CurationForm):
    id_prefix = "forget"
    reason = forms.CharField(label="Reason (kept in the audit log)", max_length=2000,
                             error_messages={"required": "Say why this memory is forgotten."})
    compliance = forms.BooleanField(required=False,
                                    label="Compliance erase: delete the text for good (cannot be undone)")


class StateForm(CurationForm):
    id_prefix = "state"
    action = forms.ChoiceField(choices=[("archive", "archive"), ("restore", "restore")])
    reason = forms.CharField(required=False, max_length=2000)


class AnyChoicesField(forms.MultipleChoiceField):
    """Ids the service checks itself (it refuses ids of another bank); the choices only draw boxes."""

    def valid_value(self, value: str) -> bool:
        return bool(value)


class MergeForm(CurationForm):
    id_prefix = "merge"
    merge = AnyChoicesField(label="Merge into this memory", widget=forms.CheckboxSelectMultiple,
                            error_messages={"required": "Tick at least one near-duplicate to merge."})
    reason = forms.CharField(required=False, label="Reason", max_length=2000)

    def __init__(self, *args: Any, choices: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        merge = self.fields["merge"]
        assert isinstance(merge, forms.MultipleChoiceField)
        merge.choices = choices or []


class BulkForm(CurationForm):
    id_prefix = "bulk"
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS], label="Bulk action")
    tag = forms.CharField(required=False, label="Tag", max_length=255)
    target = forms.CharField(required=False, label="Move to bank", max_length=255)
    reason = forms.CharField(required=False, label="Reason", max_length=2000)
    scope = forms.ChoiceField(choices=[("selected", "selected rows"), ("all", "all matching the filter")],
                              label="Apply to", initial="selected", required=False)
    compliance = forms.BooleanField(required=False)
    confirm = forms.CharField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["scope"] = data.get("scope") or "selected"
        action = data.get("action")
        if action == "forget" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Say why these memories are forgotten.")
        if action in {"tag", "untag"} and not (data.get("tag") or "").strip():
            self.add_error("tag", f"Name the tag to {action}.")
        if action == "move" and not data.get("target"):
            self.add_error("target", "Choose the bank to move them to.")
        return data


class PreferencesForm(CurationForm):
    id_prefix = "pref"
    time_zone = forms.ChoiceField(label="Time zone for every date on these pages")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from curation.timezones import zone_names

        super().__init__(*args, **kwargs)
        self.set_choices("time_zone", [("UTC", "UTC"), *((z, z) for z in zone_names() if z != "UTC")])


EXPIRY_CHOICES = [("", "never"), ("1", "1 day"), ("7", "7 days"), ("30", "30 days"), ("90", "90 days"),
                  ("365", "1 year")]


class TokenForm(CurationForm):
    id_prefix = "tk"
    name = forms.CharField(label="Name (what uses it)", max_length=200)
    banks = TagsField(label="Banks (comma separated)", widget=forms.TextInput(attrs={"list": "tk-bank-list"}))
    permissions = forms.MultipleChoiceField(label="Permissions", widget=forms.CheckboxSelectMultiple,
                                            initial=["read"])
    expires_in_days = forms.ChoiceField(label="Expires after", choices=EXPIRY_CHOICES, required=False)
    principal = forms.CharField(label="Principal (optional: agent:triage, user:you)", max_length=200, required=False,
                                help_text="Who calls with it: stamped on what it retains, found by a DSAR.")

    def __init__(self, *args: Any, permissions: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.set_choices("permissions", [(p, p) for p in permissions])


class RowEditForm(CurationForm):
    """Text and tags, edited in the list row."""

    id_prefix = "row"
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Text")
    tags = TagsField(required=False, label="Tags")


class BankDeleteForm(CurationForm):
    id_prefix = "del"
    confirm = forms.CharField(label="Type the bank id to confirm", max_length=255)
    reason = forms.CharField(label="Reason (kept in the audit log)", max_length=2000)

    def __init__(self, *args: Any, bank_id: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bank_id = bank_id

    def clean_confirm(self) -> str:
        value = self.cleaned_data["confirm"].strip()
        if value != self.bank_id:
            raise forms.ValidationError(f"Type {self.bank_id} exactly to delete this bank.")
        return value


class ReflectForm(CurationForm):
    id_prefix = "rf"
    q = forms.CharField(label="Ask the bank", max_length=2000,
                        widget=forms.TextInput(attrs={"type": "search", "placeholder": "What does the user prefer?"}))
    tags = TagsField(required=False, label="Only memories with tags")


class BankCreateForm(CurationForm):
    id_prefix = "new-bank"
    bank_id = forms.RegexField(label="Bank id", regex=r"^[a-zA-Z0-9][a-zA-Z0-9._:@-]{0,254}$", max_length=255,
                               error_messages={"invalid": "Use 1-255 letters, digits and . _ : @ -, starting with a "
                                                          "letter or digit."},
                               widget=forms.TextInput(attrs={"placeholder": "user-alice"}))
    name = forms.CharField(label="Name", required=False, max_length=200)
    description = forms.CharField(label="Description", required=False, max_length=2000)


class BankSettingsForm(CurationForm):
    id_prefix = "s"
    name = forms.CharField(label="Name", required=False, max_length=200)
    description = forms.CharField(label="Description", required=False, max_length=2000)
    dedup_threshold = forms.FloatField(label="Near-duplicate threshold", min_value=0.5, max_value=1.0,
                                       widget=forms.NumberInput(attrs={"step": "0.01"}))


class ModelCreateForm(CurationForm):
    id_prefix = "mm"
    model_id = forms.CharField(label="Id", max_length=255, widget=forms.TextInput(attrs={"placeholder": "preferences-v1"}))
    title = forms.CharField(label="Title", max_length=500)
    scope = forms.CharField(label="Scope", max_length=255, initial="bank", required=False)
    content = forms.CharField(label="Content (markdown; headings become sections)", required=False,
                              widget=forms.Textarea, initial="## Summary\n\n")
    source_ids = IdsField(label="Source memory ids", required=False)


class DirectiveForm(CurationForm):
    id_prefix = "new"
    rule_text = forms.CharField(label="Rule", widget=forms.Textarea(attrs={"rows": 3}), max_length=10000)
    scope = forms.CharField(label="Scope (bank, or tag:<name>)", max_length=255, initial="bank", required=False)
    priority = forms.IntegerField(label="Priority", initial=0, min_value=-1000, max_value=1000, required=False)

    def clean_priority(self) -> int:
        return self.cleaned_data.get("priority") or 0


class ObservationCreateForm(CurationForm):
    id_prefix = "no"
    text = forms.CharField(label="Text", max_length=10000)
    source_ids = IdsField(label="Evidence memory ids", required=False)
    scope = forms.CharField(label="Scope", max_length=255, initial="bank", required=False)
    confidence = forms.FloatField(label="Confidence (0.5 to 1)", min_value=0.5, max_value=1.0, initial=0.9,
                                  required=False, widget=forms.NumberInput(attrs={"step": "0.01"}))

    def clean_confidence(self) -> float:
        value = self.cleaned_data.get("confidence")
        return 0.9 if value is None else value


MODEL_OPS = ("replace_block", "append_block", "remove_block", "add_section", "rename_section", "remove_section")
BLOCK_TYPES = ("paragraph", "bullet_list", "ordered_list", "code")


class ModelEditForm(CurationForm):
    """One block or section edit of a mental model, sent to the service as a delta operation."""

    id_prefix = "mdl"
    op = forms.ChoiceField(choices=[(o, o) for o in MODEL_OPS])
    section_id = forms.CharField(required=False, max_length=255)
    block_type = forms.ChoiceField(choices=[(b, b) for b in BLOCK_TYPES], required=False)
    text = forms.CharField(required=False, strip=False, max_length=100_000)
    index = forms.IntegerField(required=False, min_value=0)
    heading = forms.CharField(required=False, max_length=500)
    revision = forms.IntegerField(required=False, min_value=0)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        op = data.get("op")
        if op in {"add_section", "rename_section"} and not (data.get("heading") or "").strip():
            self.add_error("heading", "A section needs a heading.")
        if op in {"replace_block", "append_block"} and not (data.get("text") or "").strip():
            self.add_error("text", "A block needs some text; remove the block instead.")
        if op and op != "add_section" and not data.get("section_id"):
            self.add_error("section_id", "Which section?")
        return data


class ModelActionForm(CurationForm):
    id_prefix = "mda"
    action = forms.ChoiceField(choices=[("revert", "revert"), ("refresh", "refresh"), ("delete", "delete")])
    to = forms.IntegerField(required=False, min_value=1)
    content = forms.CharField(required=False, max_length=200_000)
    source_ids = IdsField(required=False)
    reason = forms.CharField(required=False, max_length=2000)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "revert" and not data.get("to"):
            self.add_error("to", "Choose the revision to go back to.")
        return data


class DirectiveChangeForm(CurationForm):
    id_prefix = "dch"
    directive_id = forms.CharField(max_length=255)
    action = forms.ChoiceField(choices=[(a, a) for a in ("activate", "deactivate", "update", "delete")])
    rule_text = forms.CharField(required=False, max_length=10000)
    scope = forms.CharField(required=False, max_length=255)
    priority = forms.IntegerField(required=False, min_value=-1000, max_value=1000, label="Priority")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "update" and not (data.get("rule_text") or "").strip():
            self.add_error("rule_text", "A directive needs its rule.")
        return data


class ObservationChangeForm(CurationForm):
    id_prefix = "och"
    observation_id = forms.CharField(max_length=64)
    action = forms.ChoiceField(choices=[(a, a) for a in ("update", "invalidate", "delete")])
    text = forms.CharField(required=False, max_length=10000)
    attach = IdsField(required=False, label="Attach memory ids")
    detach = IdsField(required=False, label="Detach memory ids")


class GraphLinkForm(CurationForm):
    id_prefix = "gl"
    action = forms.ChoiceField(choices=[("link", "link"), ("unlink", "unlink")], required=False)
    entity_a = forms.CharField(max_length=255)
    entity_b = forms.CharField(required=False, max_length=255)
    link_type = forms.CharField(required=False, max_length=64)
    link_id = forms.IntegerField(required=False, min_value=1)
    evidence = forms.CharField(required=False, max_length=2000)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["action"] = data.get("action") or "link"
        if data["action"] == "unlink" and not data.get("link_id"):
            self.add_error("link_id", "Which link?")
        if data["action"] == "link" and not (data.get("entity_b") and data.get("link_type")):
            self.add_error("entity_b", "Choose the other entity and the kind of link.")
        return data
