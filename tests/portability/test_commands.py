from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from banks.models import Memory
from banks.services.memories import memory_retain
from tests.portability.fixtures import FIXTURES

pytestmark = pytest.mark.django_db


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_import_dry_run_then_import_then_export(bank, tmp_path):
    out = run("memory_import", "--bank", "user-alice", "--input", str(FIXTURES / "sample.ama.jsonl"), "--dry-run",
              "--root", str(FIXTURES))
    # Ten memories and one observation (m-0003 carries an observation's bookkeeping).
    assert "would import 10 new" in out and "observations 1" in out and "line 8: duplicate content of memory 'm-0001'" in out
    assert Memory.objects.count() == 0
    out = run("memory_import", "--bank", "user-alice", "--input", str(FIXTURES / "sample.ama.jsonl"),
              "--root", str(FIXTURES))
    assert "imported 10 new" in out and Memory.objects.count() == 10
    out = run("memory_export", "--bank", "user-alice", "--output", str(tmp_path / "out.ama.jsonl"))
    assert "exported 11" in out and (tmp_path / "out.ama.jsonl").exists()


def test_import_refuses_a_path_outside_the_given_root(bank, tmp_path):
    with pytest.raises(CommandError, match="escapes allowed roots"):
        run("memory_import", "--bank", "user-alice", "--input", str(FIXTURES / "sample.ama.jsonl"),
            "--root", str(tmp_path))


def test_strict_import_fails_and_writes_nothing(bank, tmp_path):
    (tmp_path / "bad.ama.jsonl").write_text('{"_ama_version": 1}\n{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    with pytest.raises(CommandError, match="strict mode"):
        run("memory_import", "--bank", "user-alice", "--input", str(tmp_path / "bad.ama.jsonl"), "--strict")
    assert Memory.objects.count() == 0


def test_migrate_between_banks_in_one_step(bank):
    memory_retain(bank=bank, text="Alice likes jazz.", actor="test", tags=["music"], fact_type="experience")
    out = run("memory_migrate", "--from-bank", "user-alice", "--to-bank", "user-alice-2")
    assert "imported 1 into user-alice-2" in out
    copy = Memory.objects.get(bank__bank_id="user-alice-2")
    assert (copy.text, copy.tags, copy.fact_type) == ("Alice likes jazz.", ["music"], "experience")
    assert copy.memory_id == Memory.objects.get(bank=bank).memory_id


@pytest.mark.parametrize("fmt", ["csv", "markdown", "amplihack"])
def test_export_in_other_formats_reads_back(bank, make_bank, tmp_path, fmt):
    from portability.formats.registry import open_archive
    from portability.services import archive_import

    memory_retain(bank=bank, text="Alice likes jazz.", actor="test", tags=["music"])
    memory_retain(bank=bank, text="Bob runs marathons.", actor="test")
    target = tmp_path / f"out.{fmt}"
    out = run("memory_export", "--bank", "user-alice", "--output", str(target), "--format", fmt)
    assert f"exported 2 as {fmt}" in out
    copy = make_bank("copy")
    report = archive_import(bank=copy, records=open_archive(target, fmt)[2], actor="test")
    assert report.imported == 2
    assert set(Memory.objects.filter(bank=copy).values_list("text", flat=True)) == {"Alice likes jazz.",
                                                                                   "Bob runs marathons."}
