"""Containment: every attack listed in the security promises must fail before any file is touched.

Every call passes ``allowed_roots`` or an explicit ``env`` mapping, so the real environment of
the test process never decides an outcome.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portability.paths import (
    CONTAINMENT_REQUIRED,
    MAX_COMPONENT_BYTES,
    MAX_PATH_CHARS,
    PathNotAllowed,
    configured_roots,
    resolve_contained,
    sanitize_upload_name,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports-evil").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return tmp_path / "exports"


def contained(path: str | Path, root: Path, **kw: object) -> Path:
    kw.setdefault("env", {})
    return resolve_contained(path, allowed_roots=[root], **kw)  # type: ignore[arg-type]


def refused(path: str | Path, root: Path | None, code: str, **kw: object) -> PathNotAllowed:
    with pytest.raises(PathNotAllowed) as caught:
        if root is None:
            resolve_contained(path, **kw)
        else:
            contained(path, root, **kw)
    assert caught.value.code == code, str(caught.value)
    assert isinstance(caught.value, ValueError)
    return caught.value


def test_inside_the_root_and_the_root_itself(root: Path) -> None:
    assert contained(root / "a.ama.jsonl", root) == root / "a.ama.jsonl"
    assert contained(root / "new" / "deep" / "b.jsonl", root) == root / "new" / "deep" / "b.jsonl"
    assert contained(root, root) == root
    assert contained(f"{root}/", root) == root
    assert contained(root / "sub" / ".." / "b.jsonl", root) == root / "b.jsonl"
    assert contained(os.fsencode(root / "c.jsonl"), root) == root / "c.jsonl"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "attack",
    [
        "{root}/../outside.txt",
        "{root}/../../../../../../etc/passwd",
        "{root}/sub/../../outside.txt",
        "{root}/..",
        "/etc/passwd",
        "/",
        "{root}-evil/x.jsonl",  # sibling whose name starts with the root's name
        "{root}/../exports-evil/x.jsonl",
    ],
)
def test_escapes_are_refused(root: Path, attack: str) -> None:
    error = refused(attack.format(root=root), root, "escapes_roots")
    assert str(error) == f"Portability path escapes allowed roots: {attack.format(root=root)!r}"


def test_the_escape_message_names_neither_the_resolved_path_nor_the_roots(root: Path, tmp_path: Path) -> None:
    (root / "link").symlink_to(tmp_path / "exports-evil")
    error = refused(root / "link" / "x", root, "escapes_roots")
    assert str(error) == f"Portability path escapes allowed roots: {str(root / 'link' / 'x')!r}"
    assert "exports-evil" not in str(error) and " not in " not in str(error)


@pytest.mark.parametrize("name", ["%2e%2e/%2e%2e/etc/passwd", "..%2f..%2fetc", "%252e%252e%252f", "%2E%2E", "..%5c..%5c",
                                  "%2E./x", ".%2e/x", "%2e/x", "a%2fb", "\u2025/x", "\u2024\u2024/x",
                                  "\uff0e\uff0e/x", ".\u0301./x", "\u2024"])
def test_percent_encoded_and_look_alike_dot_segments_are_refused(root: Path, name: str) -> None:
    refused(f"{root}/{name}", root, "deceptive_segment")
    assert list(root.iterdir()) == []


@pytest.mark.parametrize("char", ["\u202a", "\u202e", "\u2066", "\u2069", "\u2028", "\u2029", "\u200b",
                                  "\ufeff", "\ud800", "\udfff"])
def test_bidi_format_separator_and_surrogate_characters_are_refused(root: Path, char: str) -> None:
    refused(f"{root}/a{char}b.jsonl", root, "control_character")
    with pytest.raises(PathNotAllowed):
        sanitize_upload_name(f"a{char}b.jsonl")


def test_percent_signs_that_decode_to_ordinary_names_stay_names(root: Path) -> None:
    assert contained(f"{root}/100%25 done.jsonl", root) == root / "100%25 done.jsonl"


def test_a_symlink_inside_the_root_pointing_out_is_refused(root: Path, tmp_path: Path) -> None:
    (root / "link.jsonl").symlink_to(tmp_path / "outside.txt")
    (root / "dirlink").symlink_to(tmp_path)
    (root / "dangling.jsonl").symlink_to(tmp_path / "not-yet-there.jsonl")
    error = refused(root / "link.jsonl", root, "escapes_roots")
    assert "outside.txt" not in str(error)  # the link is reported, never where it leads
    refused(root / "dirlink" / "outside.txt", root, "escapes_roots")
    refused(root / "dirlink" / "exports-evil" / "x", root, "escapes_roots")
    refused(root / "dangling.jsonl", root, "escapes_roots")  # an export would create the file outside


def test_a_symlink_that_stays_inside_is_fine(root: Path) -> None:
    (root / "real.jsonl").write_text("{}")
    (root / "alias.jsonl").symlink_to(root / "real.jsonl")
    assert contained(root / "alias.jsonl", root) == root / "real.jsonl"


def test_a_root_given_through_a_symlink_is_resolved_too(root: Path, tmp_path: Path) -> None:
    (tmp_path / "root-link").symlink_to(root)
    assert contained(root / "a.jsonl", tmp_path / "root-link") == root / "a.jsonl"
    refused(tmp_path / "outside.txt", tmp_path / "root-link", "escapes_roots")


def test_unresolvable_paths(root: Path) -> None:
    (root / "loop-a").symlink_to(root / "loop-b")
    (root / "loop-b").symlink_to(root / "loop-a")
    error = refused(root / "loop-a" / "x", root, "unresolvable")
    assert str(error).startswith(f"Portability path cannot be resolved: '{root / 'loop-a' / 'x'}' (")
    error = refused("~nosuchuser-memoryhub/x.jsonl", root, "unresolvable")
    assert str(error).startswith("Portability path cannot be resolved: '~nosuchuser-memoryhub/x.jsonl' (")
    refused("", root, "unresolvable")


@pytest.mark.parametrize("char", ["\x00", "\n", "\r", "\t", "\x1b", "\x1f", "\x7f"])
def test_control_characters_are_refused_before_anything_else(root: Path, char: str) -> None:
    path = f"{root}/a{char}b.jsonl"
    error = refused(path, root, "control_character")
    assert str(error) == f"Portability path contains illegal control character: {path!r}"
    # Not even "no roots configured" or "too long" comes first.
    refused(f"/x{char}", None, "control_character", env={})
    refused(f"{root}/{'a' * 300}{char}", root, "control_character")


def test_a_control_character_in_a_long_path_is_not_echoed_whole(root: Path) -> None:
    error = refused("/" + "a" * 100_000 + "\x00", root, "control_character")
    assert len(str(error)) < 400


def test_very_long_paths_and_names_are_refused(root: Path) -> None:
    refused(root / ("a" * (MAX_COMPONENT_BYTES + 1)), root, "too_long")
    refused(root / ("é" * 128), root, "too_long")  # 256 bytes in UTF-8
    assert contained(root / ("é" * 127), root) == root / ("é" * 127)
    assert contained(root / ("a" * MAX_COMPONENT_BYTES), root) == root / ("a" * MAX_COMPONENT_BYTES)
    error = refused(str(root) + "/b" * MAX_PATH_CHARS, root, "too_long")
    assert "too long" in str(error)
    refused(str(root) + "/.." * 2000, root, "too_long")


def test_no_roots_fails_closed_with_the_three_ways_out(tmp_path: Path) -> None:
    error = refused(tmp_path / "x.jsonl", None, "containment_required", env={})
    assert str(error) == CONTAINMENT_REQUIRED
    lines = CONTAINMENT_REQUIRED.splitlines()
    assert lines[0] == "Portability path containment is required. Provide one of:"
    assert lines[1] == "  - allowed_roots=[<dir>, ...] kwarg, OR"
    assert lines[2].startswith("  - MEMORYHUB_PORTABILITY_ROOTS or ASTROCYTE_PORTABILITY_ROOTS environment variable")
    assert lines[3] == "  - allow_uncontained=True for trusted internal callers."
    # Empty settings are no settings.
    refused(tmp_path / "x.jsonl", None, "containment_required",
            env={"MEMORYHUB_PORTABILITY_ROOTS": "", "ASTROCYTE_PORTABILITY_ROOTS": os.pathsep * 3})
    refused(tmp_path / "x.jsonl", None, "containment_required", allowed_roots=[], env={})


def test_uncontained_is_honoured_only_when_there_are_no_roots(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    assert resolve_contained(outside, allow_uncontained=True, env={}) == outside
    refused(outside, root, "escapes_roots", allow_uncontained=True)
    refused(outside, None, "escapes_roots", allow_uncontained=True,
            env={"MEMORYHUB_PORTABILITY_ROOTS": str(root)})
    # Control characters are refused even for trusted callers.
    refused(f"{outside}\n", None, "control_character", allow_uncontained=True, env={})


def test_environment_roots_and_their_precedence(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    both = {"MEMORYHUB_PORTABILITY_ROOTS": f"{root}{os.pathsep}{os.pathsep}{other}{os.pathsep}",
            "ASTROCYTE_PORTABILITY_ROOTS": str(tmp_path)}
    assert configured_roots(both) == [root, other]
    assert resolve_contained(root / "f", env=both) == root / "f"
    assert resolve_contained(other / "f", env=both) == other / "f"
    refused(tmp_path / "outside.txt", None, "escapes_roots", env=both)  # ASTROCYTE_ is not consulted
    astrocyte_only = {"ASTROCYTE_PORTABILITY_ROOTS": str(tmp_path)}
    assert resolve_contained(tmp_path / "outside.txt", env=astrocyte_only) == tmp_path / "outside.txt"
    blank_memoryhub = {"MEMORYHUB_PORTABILITY_ROOTS": os.pathsep, **astrocyte_only}
    assert configured_roots(blank_memoryhub) == [tmp_path]
    # Roots given by the call replace the environment entirely.
    refused(other / "f", root, "escapes_roots", env=both)
    assert resolve_contained(tmp_path / "outside.txt", allowed_roots=[tmp_path], env=both) == tmp_path / "outside.txt"


def test_env_none_reads_the_process_environment(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASTROCYTE_PORTABILITY_ROOTS", raising=False)
    monkeypatch.setenv("MEMORYHUB_PORTABILITY_ROOTS", str(root))
    assert resolve_contained(root / "a") == root / "a"
    # An explicit mapping wins over the process environment.
    refused(root / "a", None, "containment_required", env={})


def test_env_roots_are_expanded_and_resolved(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(root.parent))
    assert configured_roots({"MEMORYHUB_PORTABILITY_ROOTS": "~/exports/sub/.."}) == [root]
    with pytest.raises(PathNotAllowed) as caught:
        configured_roots({"MEMORYHUB_PORTABILITY_ROOTS": "~nosuchuser-memoryhub/x"})
    assert caught.value.code == "unresolvable"


def test_relative_paths_resolve_against_the_working_directory(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    assert resolve_contained("a.jsonl", allowed_roots=[root]) == root / "a.jsonl"
    assert resolve_contained("a.jsonl", allowed_roots=["."]) == root / "a.jsonl"
    refused("../outside.txt", root, "escapes_roots")


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("bank.ama.jsonl", "bank.ama.jsonl"),
        ("../../etc/passwd", "passwd"),
        ("/abs/path/x.jsonl", "x.jsonl"),
        ("C:\\Users\\x\\evil.jsonl", "evil.jsonl"),
        ("..\\..\\windows\\win.ini", "win.ini"),
        ("dir/..\\mixed/name.csv", "name.csv"),
        (".bashrc", "bashrc"),
        ("...hidden", "hidden"),
        ("my archive (1).jsonl", "my_archive_1_.jsonl"),
        ("Zoë 東京.json", "Zo_.json"),
        ("_leading_underscore.md", "_leading_underscore.md"),
    ],
)
def test_upload_names_are_sanitised(name: str, safe: str) -> None:
    assert sanitize_upload_name(name) == safe


def test_a_long_upload_name_is_capped_and_keeps_its_extension() -> None:
    name = sanitize_upload_name("a" * 500 + ".ama.jsonl")
    assert len(name) == 200 and name.endswith(".ama.jsonl")
    assert len(sanitize_upload_name("x" * 500)) == 200


@pytest.mark.parametrize("name", ["", ".", "..", "../", "/", "\\", "a/..", "\x00\x01", "....", "a\x00b\n.jsonl",
                                  "%2e%2e%2fetc", "%2e%2e", "\u2025"])
def test_upload_names_with_nothing_usable_are_refused(name: str) -> None:
    with pytest.raises(PathNotAllowed):
        sanitize_upload_name(name)


def test_a_sanitised_upload_name_always_stays_in_the_root(root: Path) -> None:
    for name in ["../../etc/passwd", "..\\..\\x", "a/../../b", ".." + "/" * 10 + "z"]:
        assert contained(root / sanitize_upload_name(name), root).parent == root


# The dot and slash look-alikes and invisible marks that used to pass as literal names.
@pytest.mark.parametrize("name", ["\u0387\u0387", "\u2027", "\u30fb\u30fb", "\uff65", "\u2219\u2219", "\u22c5",
                                  "\u2e31", "\u0660\u0660", "\u06f0", "\ua60e", "\u16eb", "x\u2044y", "a\u2215b",
                                  "\uff0f", "\u29f8etc", "\u3164", "\u115f", "\u2800", "\u00a0", "\u3000",
                                  ".\ufe0f.", "\u034f..", "..\U000e0100", "\u180b", "\u0f0b\u0f0b", "\u1362", "\ufe45",
                                  "\u0301x"])
def test_more_look_alike_and_invisible_segments_are_refused(root: Path, name: str) -> None:
    refused(f"{root}/{name}/x.jsonl", root, "deceptive_segment")
    with pytest.raises(PathNotAllowed):
        sanitize_upload_name(f"{name}.jsonl")


def test_ordinary_names_in_other_scripts_stay_names(root: Path) -> None:
    for name in ["Zoë 東京.json", "отчёт.csv", "हिन्दी.md", "ａｂｃ.jsonl", "a b.jsonl"]:
        assert contained(root / name, root) == root / name


def test_a_path_deeper_than_the_cap_is_refused(root: Path) -> None:
    refused(str(root) + "/d" * 1000 + "/x.jsonl", root, "too_long")
    assert contained(str(root) + "/d" * 40, root) == Path(str(root) + "/d" * 40)
