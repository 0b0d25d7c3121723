"""Skills from elsewhere and back: an Agent Skills folder read as a draft, a live skill written out.

An import is read from a folder, a lone `SKILL.md`, or a `.zip`/`.skill` archive (bytes, from
a file, an upload or an address). Only what a skill should carry is kept: the front matter is
validated (name, description, `allowed-tools`) and each refusal says why; files beside
`SKILL.md` are kept when they are UTF-8 text under the per-file bound, others are left out and
named; an archive is unpacked within the documents' bounds (its size, what it unpacks to, read
while it is unpacked, whatever its headers claim), with a bound on its files, and every path
must stay inside the skill's folder. Nothing is written here: the draft goes through
`intake.consider` like a learned one.

An export writes an approved skill in the same format, its provenance in the front matter's
`metadata`, so that importing it into another Skillgate round-trips its text byte for byte.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from gateway.errors import PathEscape, SkillError
from gateway.review.proposals import Proposal
from gateway.review.staging import iso
from gateway.skills.library import (
    SKILL_FILE,
    Skill,
    SkillLibrary,
    check_relpath,
    parse_skill,
    render_skill,
)
from gateway.synthesis.answer import ImportedDraft

MAX_FILES = 32
"""The most files a skill may carry beside its SKILL.md (an archive's entries count)."""
ARCHIVE_SUFFIXES = (".zip", ".skill")
EXPORT_KEYS = ("source", "origin", "approved_by", "approved_at", "based_on")
"""The provenance an export keeps in the front matter's metadata. Not the proposal's number:
it means another proposal in another install, whose start-up repair would take a file
carrying it for that proposal's own promotion."""


class ImportRefused(SkillError):
    """A skill that cannot be imported as it is: the reason is the message; nothing is written."""


@dataclass(frozen=True)
class Bounds:
    """How much an import may bring: the documents' bounds for what is downloaded and unpacked,
    the skill's own for each file."""

    archive_bytes: int
    """The most bytes of an archive or a downloaded file (SKILLGATE_MAX_DOCUMENT_MB)."""
    unpacked_bytes: int
    """The most bytes an archive may unpack to (as a DOCX may)."""
    file_bytes: int
    """The most bytes of SKILL.md's body and of each file beside it (SKILLGATE_MAX_SKILL_BYTES)."""
    files: int = MAX_FILES


@dataclass
class Bundle:
    """A skill folder as read: its SKILL.md's draft, and what was left out and why."""

    draft: ImportedDraft
    left_out: list[str] = field(default_factory=list)


def read_folder(folder: Path, bounds: Bounds, origin: str) -> Bundle:
    """A skill folder on disk (or a lone SKILL.md); links are never followed out of it."""
    if folder.is_file():
        if folder.name != SKILL_FILE and folder.suffix.lower() not in ARCHIVE_SUFFIXES:
            raise ImportRefused(f"{folder.name} is neither a SKILL.md, a folder nor a .zip/.skill")
        if folder.suffix.lower() in ARCHIVE_SUFFIXES:
            return read_archive(_read_bounded(folder, bounds.archive_bytes), bounds, origin)
        return bundle_of({SKILL_FILE: _read_bounded(folder, bounds.archive_bytes)}, bounds, origin)
    if not (folder / SKILL_FILE).is_file():
        raise ImportRefused(f"no {SKILL_FILE} in {folder}")
    root = folder.resolve()
    found: dict[str, bytes] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink() or not path.resolve().is_relative_to(root):
            raise ImportRefused(f"{rel} leads outside the skill's folder")
        if not path.is_file() or _hidden(rel):
            continue
        if len(found) >= bounds.files + 1:
            raise ImportRefused(f"more than {bounds.files} files beside {SKILL_FILE}")
        data = _read_bounded(path, bounds.archive_bytes - total)
        total += len(data)
        found[rel] = data
    return bundle_of(found, bounds, origin)


def read_archive(data: bytes, bounds: Bounds, origin: str) -> Bundle:
    """A `.zip`/`.skill` archive: its SKILL.md at the top or in one folder."""
    if len(data) > bounds.archive_bytes:
        raise ImportRefused(_over("the archive", len(data), bounds.archive_bytes))
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ImportRefused(f"not a zip archive ({type(exc).__name__})") from exc
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        names = [i.filename for i in infos]
        for name in names:  # every path first: one that escapes refuses the whole archive
            _inside(name)
        prefix = _top_folder(names)
        kept = [i for i in infos if not _hidden(i.filename[len(prefix) :])]
        if len(kept) > bounds.files + 1:
            raise ImportRefused(f"more than {bounds.files} files beside {SKILL_FILE}")
        declared = sum(i.file_size for i in kept)
        if declared > bounds.unpacked_bytes:
            raise ImportRefused(_over("the archive unpacks to", declared, bounds.unpacked_bytes))
        found: dict[str, bytes] = {}
        total = 0
        for info in kept:
            room = bounds.unpacked_bytes - total
            try:
                with archive.open(info) as member:
                    body = member.read(room + 1)  # bounded while unpacked, whatever it claims
            except (
                zipfile.BadZipFile,
                ValueError,
                OSError,
                EOFError,
                NotImplementedError,
                RuntimeError,  # an encrypted entry
            ) as exc:
                raise ImportRefused(f"{info.filename} cannot be unpacked ({exc})") from exc
            total += len(body)
            if total > bounds.unpacked_bytes:
                raise ImportRefused(
                    _over("the archive unpacks to more than", total, bounds.unpacked_bytes)
                )
            found[info.filename[len(prefix) :]] = body
    return bundle_of(found, bounds, origin)


def bundle_of(found: dict[str, bytes], bounds: Bounds, origin: str) -> Bundle:
    """The draft of SKILL.md, with the text files beside it that fit."""
    raw = found.pop(SKILL_FILE, None)
    if raw is None:
        raise ImportRefused(f"no {SKILL_FILE} at the top of the skill's folder")
    try:
        text = raw.decode("utf-8")
        skill = parse_skill(text)
    except UnicodeDecodeError as exc:
        raise ImportRefused(f"{SKILL_FILE} is not UTF-8 text") from exc
    except SkillError as exc:
        raise ImportRefused(f"{SKILL_FILE}: {exc}") from exc
    size = len(skill.body.encode("utf-8"))
    if size > bounds.file_bytes:
        raise ImportRefused(_over(f"{SKILL_FILE}'s body", size, bounds.file_bytes))
    files: dict[str, str] = {}
    left_out: list[str] = []
    for rel, data in sorted(found.items()):
        try:
            check_relpath(rel)
        except PathEscape as exc:
            raise ImportRefused(str(exc)) from exc
        if len(data) > bounds.file_bytes:
            left_out.append(f"{rel}: {_over('it', len(data), bounds.file_bytes)}")
            continue
        try:
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            left_out.append(f"{rel}: not text")
            continue
        if "\x00" in content:
            left_out.append(f"{rel}: not text")
            continue
        files[rel] = content
    draft = ImportedDraft(
        kind="create",
        name=skill.name,
        description=skill.description,
        content=skill.body,
        allowed_tools=skill.allowed_tools,
        origin=origin,
        files=files,
        rationale="",
    )
    return Bundle(draft, left_out)


def _read_bounded(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        data = handle.read(max(limit, 0) + 1)
    if len(data) > limit:
        raise ImportRefused(_over(path.name, path.stat().st_size, max(limit, 0)))
    return data


def _inside(name: str) -> None:
    """Refuse an archive path that could leave the folder it is unpacked in."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or path.is_absolute()
        or ".." in path.parts
        or (path.parts and path.parts[0].endswith(":"))
    ):
        raise ImportRefused(f"{name!r} is a path outside the skill's folder")


def _top_folder(names: Iterable[str]) -> str:
    """`name/` when the archive holds the skill in one folder (as a zipped folder does)."""
    names = list(names)
    if SKILL_FILE in names:
        return ""
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and all("/" in n for n in names):
        return f"{tops.pop()}/"
    return ""


def _hidden(rel: str) -> bool:
    """Dot files and folders (`.git/`, `.DS_Store`), and macOS' `__MACOSX/` copies."""
    return any(p.startswith(".") or p == "__MACOSX" for p in rel.split("/"))


def _over(what: str, size: int, limit: int) -> str:
    return f"{what} is {size:,} bytes, over the bound of {limit:,}"


def export_text(skill: Skill, proposal: Proposal | None, source: str) -> str:
    """A live skill's SKILL.md as it is carried elsewhere: name, description, `allowed-tools`,
    and its provenance (source, who approved it and when, what it was based on)."""
    meta: dict[str, Any] = {"source": source}
    old = skill.metadata
    if proposal is not None:
        if proposal.origin is not None:
            meta["origin"] = proposal.origin
        if proposal.decided_by is not None:
            meta["approved_by"] = proposal.decided_by
            meta["approved_at"] = iso(proposal.decided_at)
        meta["based_on"] = list(proposal.based_on)
    else:
        meta.update({k: old[k] for k in EXPORT_KEYS if k in old and k not in meta})
    out = Skill(
        name=skill.name,
        description=skill.description,
        body=skill.body,
        metadata=meta,
        allowed_tools=skill.allowed_tools,
    )
    return render_skill(out)


def write_export(library: SkillLibrary, slug: str, text: str, into: Path) -> Path:
    """Write an exported skill as `<into>/<slug>/SKILL.md` with the text files beside it."""
    folder = into / slug
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SKILL_FILE).write_text(text, encoding="utf-8", newline="")
    for rel, content in library.files_beside(slug).items():
        path = folder.joinpath(*rel.split("/"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8", newline="")
    return folder


def zip_export(library: SkillLibrary, slug: str, text: str) -> bytes:
    """An exported skill as a `.zip` of its folder (the console's download)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{slug}/{SKILL_FILE}", text)
        for rel, content in library.files_beside(slug).items():
            archive.writestr(f"{slug}/{rel}", content)
    return out.getvalue()
