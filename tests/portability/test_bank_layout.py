"""The per-bank layout's rules (pure) and the descriptor-based file operations below a root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portability.paths import (
    MARKER,
    Location,
    PathNotAllowed,
    atomic_write,
    bank_parts,
    check_cli_write,
    check_read,
    check_write,
    directory_export,
    locate,
    owner,
    walk_files,
)


def test_a_banks_folder_is_under_its_tenant() -> None:
    assert bank_parts("acme:support") == ("banks", "acme", "acme:support")
    assert bank_parts("user-alice") == ("banks", "_", "user-alice")
    assert owner(("banks", "acme", "acme:support", "x.jsonl")) == "acme:support"
    assert owner(("banks", "evil", "acme:support", "x.jsonl")) is None  # under the wrong tenant: nobody's
    assert owner(("banks", "_")) is None and owner(("x.jsonl",)) is None


def test_a_bank_writes_only_strictly_inside_its_own_folder() -> None:
    check_write(("banks", "_", "a", "x.jsonl"), "a")
    for parts in [(), ("banks",), ("banks", "_"), ("banks", "_", "a"), ("banks", "_", "b", "x"), ("x.jsonl",)]:
        with pytest.raises(PathNotAllowed) as caught:
            check_write(parts, "a")
        assert caught.value.code == "not_owned"


def test_reading_needs_admin_on_the_folders_bank_and_legacy_files_admin_on_every_bank() -> None:
    mine = {"a", "a2"}.__contains__
    check_read(("banks", "_", "a2", "x"), may_admin=mine, every_bank=False)
    for parts, every in [(("banks", "_", "b", "x"), True), (("x",), False), ((), True), (("banks",), True),
                         (("banks", "_"), True)]:
        with pytest.raises(PathNotAllowed):
            check_read(parts, may_admin=mine, every_bank=every)
    check_read(("x",), may_admin=mine, every_bank=True)


def test_the_shell_writes_anywhere_but_over_a_root_or_the_layouts_folders() -> None:
    check_cli_write(("x.jsonl",))
    check_cli_write(("banks", "_", "a", "x"))
    for parts in [(), ("banks",), ("banks", "_"), ("banks", "_", "a")]:
        with pytest.raises(PathNotAllowed):
            check_cli_write(parts)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    return tmp_path / "root"


def test_a_symlinked_folder_is_never_followed(root: Path, tmp_path: Path) -> None:
    (root / "hop").symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "f.jsonl").write_text("outside")
    where = Location(root, ("hop", "f.jsonl"))
    with pytest.raises(PathNotAllowed) as caught:
        where.read_text()
    assert caught.value.code == "symlink" and str(root) not in str(caught.value)
    with pytest.raises(PathNotAllowed):
        with atomic_write(Location(root, ("hop", "new.jsonl"))) as fp:
            fp.write("x")
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["f.jsonl"]
    (root / "link.jsonl").symlink_to(tmp_path / "outside" / "f.jsonl")
    with pytest.raises(PathNotAllowed):
        Location(root, ("link.jsonl",)).read_text()
    assert Location(root, ("link.jsonl",)).kind() == "symlink"


def test_only_regular_files_with_one_link_are_read(root: Path, tmp_path: Path) -> None:
    os.mkfifo(root / "fifo")
    (tmp_path / "outside" / "f").write_text("outside")
    os.link(tmp_path / "outside" / "f", root / "linked")
    for name, code in [("fifo", "not_a_file"), ("linked", "hard_link")]:
        with pytest.raises(PathNotAllowed) as caught:
            Location(root, (name,)).read_bytes()
        assert caught.value.code == code


def test_an_upload_never_takes_an_existing_name(root: Path) -> None:
    (root / "taken.jsonl").write_text("first")
    with pytest.raises(PathNotAllowed) as caught:
        with atomic_write(Location(root, ("taken.jsonl",)), "wb", replace=False) as fp:
            fp.write(b"second")
    assert caught.value.code == "exists" and (root / "taken.jsonl").read_text() == "first"
    assert sorted(p.name for p in root.iterdir()) == ["taken.jsonl"]  # no temporary file left


def test_a_directory_export_replaces_only_an_earlier_export(root: Path) -> None:
    (root / "notes").mkdir()
    (root / "notes" / "mine.txt").write_text("keep")
    with pytest.raises(PathNotAllowed, match="not an earlier export"):
        with directory_export(Location(root, ("notes",))) as writer:
            writer.write_text(["a.md"], "x")
    assert (root / "notes" / "mine.txt").read_text() == "keep"
    for text in ("first", "second"):
        with directory_export(Location(root, ("md",))) as writer:
            writer.write_text(["user", "semantic", "a.md"], text)
    assert (root / "md" / "user" / "semantic" / "a.md").read_text() == "second"
    assert (root / "md" / MARKER).is_file()
    assert [p.name for p in root.iterdir() if p.name.startswith(".")] == []  # nothing partial left
    with pytest.raises(PathNotAllowed):
        with directory_export(Location(root)):
            pass


def test_walking_skips_symlinks_and_dot_names(root: Path, tmp_path: Path) -> None:
    (root / "a").mkdir()
    (root / "a" / "n.md").write_text("x")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.md").write_text("x")
    (root / "hop").symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "o.md").write_text("x")
    (root / "l.md").symlink_to(tmp_path / "outside" / "o.md")
    assert [w.parts for w in walk_files(Location(root), ".md")] == [("a", "n.md")]


def test_locate_places_a_path_below_the_innermost_root(root: Path) -> None:
    (root / "inner").mkdir()
    assert locate(root / "inner" / "x", roots=[root, root / "inner"]) == Location(root / "inner", ("x",))
    assert locate(root / "x" / ".." / "y", roots=[str(root)]) == Location(root, ("y",))
