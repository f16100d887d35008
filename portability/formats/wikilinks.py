"""Which note of a vault an Obsidian wikilink points at, decided as Obsidian decides it.

Pure: it knows notes by their vault-relative paths, front-matter ``aliases`` and ``id``,
never the filesystem or the database. The rules, in the order they are tried:

1. ``[[./x]]`` / ``[[../x]]`` are relative to the linking note's folder; ``[[/x]]`` is from the vault root.
2. The exact vault path (``[[People/Priya Raman]]``), with or without ``.md``.
3. A path suffix (``[[Priya Raman]]``, ``[[People/Priya Raman]]`` for ``Team/People/Priya Raman.md``).
   When several notes match, the shortest path wins (then the alphabetically first), as Obsidian does;
   a link naming a folder never falls back to the bare name.
4. A front-matter alias (``aliases: [Billing]`` makes ``[[Billing]]`` resolve), shortest path first.
5. A front-matter ``id`` (AgentOS notes link by trace id).

Matching ignores case and Unicode normalisation form, like Obsidian on every platform. Of two
notes with the same body, the one outside an ``Archive/`` folder is kept (then the shorter path);
a link to the other resolves to the kept one.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

ARCHIVE_FOLDERS = frozenset({"archive", "archives", "archived", "_archive"})
# What Obsidian opens besides notes (its accepted file formats); a dotted note name ("v1.2") is still a note.
ATTACHMENTS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".bmp", ".svg", ".webp", ".avif", ".mp3", ".wav", ".m4a",
                         ".ogg", ".3gp", ".flac", ".webm", ".mp4", ".ogv", ".mov", ".mkv", ".pdf", ".canvas",
                         ".base"})
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")


@dataclass(frozen=True)
class Wikilink:
    """One ``[[...]]`` or ``![[...]]`` as written: path, optional ``#heading`` / ``#^block``, optional alias."""

    target: str
    heading: str | None = None
    alias: str | None = None
    embed: bool = False

    @property
    def is_attachment(self) -> bool:
        """A file Obsidian embeds or opens that is not a note (``image.png``, ``doc.pdf``, ``board.canvas``)."""
        return posixpath.splitext(self.target)[1].lower() in ATTACHMENTS


@dataclass(frozen=True)
class VaultNote:
    path: str  # vault-relative, "/" separated, with its ".md"
    memory_id: str
    aliases: tuple[str, ...] = ()
    note_id: str | None = None
    body: str | None = None  # only to find identical notes; may be a digest


def _key(text: str) -> str:
    return unicodedata.normalize("NFC", text).strip().casefold()


def _stem(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def _in_archive(path: str) -> bool:
    return any(part.casefold() in ARCHIVE_FOLDERS for part in path.split("/")[:-1])


def parse_wikilinks(body: str) -> list[Wikilink]:
    """Every wikilink and embed of ``body`` outside code blocks and inline code, in order."""
    prose = _INLINE_CODE.sub(" ", _FENCE.sub(" ", body))
    links = []
    for bang, inner in _LINK.findall(prose):
        # "\|" is how a link inside a Markdown table escapes its alias bar.
        text, _, alias = inner.replace("\\|", "|").partition("|")
        path, _, heading = text.partition("#")
        links.append(Wikilink(target=path.strip(), heading=heading.strip() or None, alias=alias.strip() or None,
                              embed=bool(bang)))
    return links


def _preference(note: VaultNote) -> tuple[bool, int, str]:
    return (_in_archive(note.path), len(note.path), note.path)


def keep_among_duplicates(notes: Iterable[VaultNote], same: Callable[[VaultNote], str | None] | None = None
                          ) -> dict[str, VaultNote]:
    """``{path of a note given up: the note kept}`` for notes whose bodies are identical."""
    same = same or (lambda note: note.body)
    groups: dict[str, list[VaultNote]] = {}
    for note in notes:
        body = same(note)
        if body:
            groups.setdefault(body, []).append(note)
    given_up: dict[str, VaultNote] = {}
    for group in groups.values():
        if len(group) > 1:
            kept, *others = sorted(group, key=_preference)
            for other in others:
                given_up[other.path] = kept
    return given_up


def _shortest(candidates: Iterable[VaultNote]) -> VaultNote | None:
    return min(candidates, key=lambda n: (len(n.path), n.path), default=None)


@dataclass
class VaultIndex:
    notes: list[VaultNote]
    given_up: dict[str, VaultNote] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_path: dict[str, VaultNote] = {}
        self.by_name: dict[str, list[VaultNote]] = {}
        self.by_alias: dict[str, list[VaultNote]] = {}
        self.by_id: dict[str, VaultNote] = {}
        for note in self.notes:
            stem = _stem(note.path)
            self.by_path[_key(stem)] = note
            self.by_name.setdefault(_key(stem.rsplit("/", 1)[-1]), []).append(note)
            for alias in note.aliases:
                self.by_alias.setdefault(_key(alias), []).append(note)
            if note.note_id:
                self.by_id.setdefault(note.note_id, note)

    @classmethod
    def build(cls, notes: Iterable[VaultNote]) -> VaultIndex:
        notes = list(notes)
        return cls(notes=notes, given_up=keep_among_duplicates(notes))

    def _kept(self, note: VaultNote | None) -> VaultNote | None:
        return self.given_up.get(note.path, note) if note is not None else None

    def resolve(self, target: str, source_path: str = "") -> VaultNote | None:
        """The note ``target`` (a link's path part) points at from the note at ``source_path``, or None."""
        raw = target.strip().replace("\\", "/")
        if not raw:
            return None
        link = _stem(raw)
        if link.startswith(("./", "../")):
            folder = posixpath.dirname(source_path)
            joined = posixpath.normpath(posixpath.join(folder, link))
            if joined.startswith("../") or joined == "..":
                return None  # outside the vault
            return self._kept(self.by_path.get(_key(joined)))
        link = link.lstrip("/")
        key = _key(link)
        if key in self.by_path:
            return self._kept(self.by_path[key])
        name = key.rsplit("/", 1)[-1]
        candidates = self.by_name.get(name, [])
        if "/" in key:
            candidates = [n for n in candidates if _key(_stem(n.path)).endswith("/" + key)]
        found = _shortest(candidates)
        if found is None and "/" not in key:
            found = _shortest(self.by_alias.get(key, []))
        if found is None:
            found = self.by_id.get(raw)
        return self._kept(found)
