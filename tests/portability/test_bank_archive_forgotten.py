"""Forgotten stays forgotten: a whole-bank archive keeps forgotten and archived memories out of its AMA part,
so no AMA reader (ours, Astrocyte's) stores them as live; every table restores; a bad row names its line;
and the same detector restores a whole-bank archive from the API, the CLI and the transfer page."""

from __future__ import annotations

import asyncio
import json
from io import StringIO

import pytest
from django.core.management import call_command

from banks.models import Bank, Job, LifecyclePolicy, Memory
from banks.services.forget import memory_forget
from banks.services.lifecycle import lifecycle_policy_set
from banks.services.memories import memory_retain
from memoryhub.errors import Unprocessable
from portability.formats.registry import detect_format, open_archive
from portability.jobs import job_run
from portability.models import PendingLink
from portability.services.bank_archive import TABLES, bank_archive_export, bank_archive_import
from tests.portability.fixtures import bank_folder
from tests.portability.test_bank_archive import rich_bank, table

pytestmark = pytest.mark.django_db

SECRET = "Dana Ruiz's home address is 12 Elm Road."


def bank_with_a_forgotten_memory(bank: Bank) -> None:
    gone = memory_retain(bank=bank, text=SECRET, actor="t").memory
    memory_forget(bank=bank, actor="t", memory_ids=[gone.memory_id], reason="subject asked")
    rich_bank(bank)  # its legal hold comes after the forget
    lifecycle_policy_set(bank=bank, actor="t", archive_after_days=30, exempt_tags=["keep"])
    PendingLink.objects.create(bank=bank, source_memory_id="later-a", target_memory_id="later-b", link_type="next")


def test_astrocyte_takes_no_forgotten_or_archived_memory_as_live(bank, tmp_path):
    from astrocyte import Astrocyte

    bank_with_a_forgotten_memory(bank)
    dest = tmp_path / "alice.mhba.jsonl"
    bank_archive_export(bank=bank, dest=dest, actor="t")
    live = sorted(Memory.objects.filter(bank=bank).live().values_list("text", flat=True))
    assert Memory.objects.filter(bank=bank).exclude(archived_at=None).exists()
    brain = Astrocyte.from_config_dict({"provider_tier": "storage", "vector_store": "in_memory",
                                        "llm_provider": "mock"})
    back = tmp_path / "back.ama.jsonl"

    async def through_astrocyte() -> object:
        result = await brain.import_bank("copy", str(dest), allowed_roots=[str(tmp_path)])
        await brain.export_bank("copy", str(back), allowed_roots=[str(tmp_path)])
        return result

    result = asyncio.run(through_astrocyte())
    assert result.imported == len(live)
    texts = sorted(json.loads(line)["text"] for line in back.read_text().splitlines()[1:] if line)
    assert texts == live and SECRET not in texts
    # Our own AMA reader, asked to read the file as AMA, sees the same live memories only.
    ours = [r.text for r in open_archive(dest, "ama")[2]() if hasattr(r, "text")]
    assert sorted(ours) == live
    assert json.loads(dest.read_text().splitlines()[0])["memory_count"] == len(live)


def test_every_table_restores_lifecycle_policy_and_pending_links_included(bank, make_bank, tmp_path):
    bank_with_a_forgotten_memory(bank)
    dest = tmp_path / "alice.mhba.jsonl.gz"
    counts = bank_archive_export(bank=bank, dest=dest, actor="t")
    assert counts["lifecycle_policy"] == 1 and counts["pending_link"] == 1
    copy = make_bank("copy")
    bank_archive_import(bank=copy, path=dest, actor="t", max_bytes=1 << 30)
    for kind, _, _ in TABLES:
        assert table(copy, kind) == table(bank, kind), kind
    assert LifecyclePolicy.objects.get(bank=copy).exempt_tags == ["keep"]
    forgotten = Memory.objects.get(bank=copy, text=SECRET)
    assert forgotten.forgotten_at is not None


@pytest.mark.parametrize(("damage", "reason"), [
    (lambda row: {**row, "row": {**row["row"], "confidence": "very"}}, "observation row cannot be restored"),
    (lambda row: {**row, "row": [1, 2]}, "row is not an object"),
    (lambda row: {**row, "row": {**row["row"], "title": None}}, "mental_model row cannot be restored"),
])
def test_a_bad_row_is_a_422_naming_its_line_and_nothing_is_restored(damage, reason, bank, make_bank, tmp_path):
    rich_bank(bank)
    dest = tmp_path / "alice.mhba.jsonl"
    bank_archive_export(bank=bank, dest=dest, actor="t")
    lines = dest.read_text().splitlines()
    kind = reason.split()[0] if "cannot" in reason else "observation"
    number = next(i for i, line in enumerate(lines, start=1) if json.loads(line).get("_mhba") == kind)
    lines[number - 1] = json.dumps(damage(json.loads(lines[number - 1])))
    dest.write_text("\n".join(lines) + "\n")
    copy = make_bank("copy")
    with pytest.raises(Unprocessable) as refused:
        bank_archive_import(bank=copy, path=dest, actor="t", max_bytes=1 << 30)
    assert f"line {number} of alice.mhba.jsonl" in refused.value.message and reason in refused.value.message
    assert not Memory.objects.filter(bank=copy).exists()


def test_a_bad_row_over_http_is_a_422_not_a_500(api, make_bank, settings, tmp_path):
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    source = make_bank("source")
    rich_bank(source)
    dest = bank_folder(tmp_path, "user-alice") / "a.mhba.jsonl"
    bank_archive_export(bank=source, dest=dest, actor="t")
    lines = dest.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if json.loads(line).get("_mhba") == "legal_hold")
    row = json.loads(lines[number - 1])
    row["row"]["hold_id"] = None
    lines[number - 1] = json.dumps(row)
    dest.write_text("\n".join(lines) + "\n")
    response = api.post("/v1/import", {"bank_id": "user-alice", "path": str(dest)})
    assert response.status_code == 422, response.content
    assert f"line {number} of a.mhba.jsonl" in response.json()["detail"]


def test_one_detector_everywhere(bank, make_bank, tmp_path):
    rich_bank(bank)
    dest = tmp_path / "backup.jsonl"  # not even named .mhba: the header says what it is
    bank_archive_export(bank=bank, dest=dest, actor="t")
    assert detect_format(dest) == "mhba"
    with pytest.raises(ValueError, match="whole-bank archive"):
        open_archive(dest)  # never read line by line as AMA by mistake
    out = StringIO()
    call_command("memory_import", "--bank", "from-cli", "--input", str(dest), "--dry-run", stdout=out)
    assert "would restore" in out.getvalue() and not Bank.objects.filter(bank_id="from-cli").exists()
    call_command("memory_import", "--bank", "from-cli", "--input", str(dest), stdout=out)
    for kind, _, _ in TABLES:
        assert table(Bank.objects.get(bank_id="from-cli"), kind) == table(bank, kind), kind


def test_a_round_trip_through_the_transfer_page_restores_every_row(admin_client, bank, make_bank, settings, tmp_path):
    """Download the whole bank, upload it to another bank's page, preview it, import it: every row is back."""
    settings.MEMORYHUB_PORTABILITY_ROOTS = str(tmp_path)
    bank_with_a_forgotten_memory(bank)
    response = admin_client.get(f"/banks/{bank.bank_id}/transfer/download?full=1")
    assert response.status_code == 200
    archive = b"".join(response.streaming_content)
    copy = make_bank("copy")
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("backup.mhba.jsonl", archive, content_type="application/octet-stream")
    admin_client.post(f"/banks/{copy.bank_id}/transfer/upload", {"archive": upload, "root": str(tmp_path)})
    stored = bank_folder(tmp_path, copy.bank_id) / "backup.mhba.jsonl"
    assert stored.read_bytes() == archive
    jobs = []
    for kind in ("preview", "import"):
        admin_client.post(f"/banks/{copy.bank_id}/transfer/start", {"kind": kind, "path": str(stored)})
        job = Job.objects.filter(bank=copy, kind="import").order_by("-pk").first()
        job_run(job)  # what the worker runs
        job.refresh_from_db()
        assert job.state == "succeeded", job.message
        assert job.result["format"] == "mhba"
        jobs.append(job)
        if kind == "preview":
            assert not Memory.objects.filter(bank=copy).exists()
    preview, run = jobs
    assert preview.result["counts"] == run.result["counts"]
    for kind, _, _ in TABLES:
        assert table(copy, kind) == table(bank, kind), kind
