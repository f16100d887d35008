"""Containment: every attack of the security promises must fail before any file is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portability.paths import CONTAINMENT_REQUIRED, PathNotAllowed, resolve_contained, sanitize_upload_name


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports-evil").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return tmp_path / "exports"


def contained(path, root, **kw):
    return resolve_contained(path, allowed_roots=[root], **kw)


def test_inside_and_the_root_itself(root):
    assert contained(root / "a.ama.jsonl", root) == root / "a.ama.jsonl"
    assert contained(root, root) == root
    assert contained(root / "sub" / ".." / "b.jsonl", root) == root / "b.jsonl"


@pytest.mark.parametrize(
    "attack",
    [
        "{root}/../outside.txt",
        "{root}/../../../../etc/passwd",
        "/etc/passwd",
        "{root}/../exports-evil/x",
        "{root}-evil/x",
    ],
)
def test_escapes_fail(root, attack):
    with pytest.raises(PathNotAllowed) as caught:
        contained(attack.format(root=root), root)
    assert caught.value.code == "escapes_roots"
    assert "escapes allowed roots" in str(caught.value)


def test_encoded_traversal_is_just_a_name_inside(root):
    assert contained(f"{root}/%2e%2e/%2e%2e/etc", root) == root / "%2e%2e" / "%2e%2e" / "etc"


def test_symlink_pointing_out_fails(root, tmp_path):
    (root / "link").symlink_to(tmp_path / "outside.txt")
    (root / "dirlink").symlink_to(tmp_path)
    with pytest.raises(PathNotAllowed, match=str(tmp_path / "outside.txt")):
        contained(root / "link", root)
    with pytest.raises(PathNotAllowed):
        contained(root / "dirlink" / "outside.txt", root)


@pytest.mark.parametrize("char", ["\x00", "\n", "\r", "\t", "\x7f", "\x1b"])
def test_control_characters_fail_first(root, char):
    with pytest.raises(PathNotAllowed) as caught:
        resolve_contained(f"{root}/a{char}b", allowed_roots=[root])
    assert caught.value.code == "control_character"
    # Even with no roots at all, the control character is what is reported.
    with pytest.raises(PathNotAllowed) as first:
        resolve_contained(f"/x{char}", env={})
    assert first.value.code == "control_character"


def test_very_long_names_fail(root):
    with pytest.raises(PathNotAllowed) as caught:
        contained(root / ("a" * 300), root)
    assert caught.value.code == "too_long"
    with pytest.raises(PathNotAllowed):
        contained(str(root) + "/b" * 3000, root)


def test_no_roots_fails_closed_with_the_three_ways(tmp_path):
    with pytest.raises(PathNotAllowed) as caught:
        resolve_contained(tmp_path / "x", env={})
    assert caught.value.code == "containment_required"
    assert str(caught.value) == CONTAINMENT_REQUIRED
    assert "allowed_roots" in CONTAINMENT_REQUIRED and "MEMORYHUB_PORTABILITY_ROOTS" in CONTAINMENT_REQUIRED
    assert "allow_uncontained=True" in CONTAINMENT_REQUIRED


def test_uncontained_only_without_roots(root, tmp_path):
    assert resolve_contained(tmp_path / "outside.txt", allow_uncontained=True, env={}) == tmp_path / "outside.txt"
    with pytest.raises(PathNotAllowed):
        resolve_contained(tmp_path / "outside.txt", allowed_roots=[root], allow_uncontained=True)


def test_env_roots_and_their_precedence(tmp_path, root):
    other = tmp_path / "other"
    other.mkdir()
    env = {"MEMORYHUB_PORTABILITY_ROOTS": f"{root}{os.pathsep}{os.pathsep}{other}",
           "ASTROCYTE_PORTABILITY_ROOTS": str(tmp_path)}
    assert resolve_contained(other / "f", env=env) == other / "f"
    with pytest.raises(PathNotAllowed):
        resolve_contained(tmp_path / "outside.txt", env=env)  # the ASTROCYTE roots are not consulted
    assert resolve_contained(tmp_path / "outside.txt",
                             env={"ASTROCYTE_PORTABILITY_ROOTS": str(tmp_path)}) == tmp_path / "outside.txt"
    with pytest.raises(PathNotAllowed):
        resolve_contained(other / "f", allowed_roots=[root], env=env)  # call roots replace the environment


def test_relative_paths_resolve_against_the_working_directory(root, monkeypatch):
    monkeypatch.chdir(root)
    assert resolve_contained("a.jsonl", allowed_roots=[root]) == root / "a.jsonl"


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("bank.ama.jsonl", "bank.ama.jsonl"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\evil.jsonl", "evil.jsonl"),
        (".bashrc", "bashrc"),
        ("my archive (1).jsonl", "my_archive_1_.jsonl"),
        ("a\x00b.jsonl", "ab.jsonl"),
    ],
)
def test_upload_names_are_sanitised(name, safe):
    assert sanitize_upload_name(name) == safe


@pytest.mark.parametrize("name", ["", "..", "../", "/"])
def test_upload_names_with_nothing_usable_fail(name):
    with pytest.raises(PathNotAllowed):
        sanitize_upload_name(name)
