"""Skill files on disk: `<root>/<slug>/SKILL.md`, YAML frontmatter and a markdown body.

The format follows the Agent Skills convention (`name`, `description`, and a
free-form `metadata` map, where Skillgate keeps `source` and provenance).
A slug becomes a path segment, so every path composed here is checked to stay
inside the root after resolving symlinks, reads included.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from gateway.errors import InvalidSkill, InvalidSlug, PathEscape, SkillNotFound

SKILL_FILE = "SKILL.md"
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
SOURCES = ("bundled", "custom", "auto", "imported")
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)


FILE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")
MAX_DEPTH = 4
"""Folders a file beside SKILL.md may sit in (`references/api/v2/notes.md` is three)."""


def check_relpath(path: str) -> str:
    """A file's path inside a skill folder, `/`-separated; PathEscape when it could leave the
    folder (absolute, `..`, a drive, a backslash) or is not a plain name of a plain file."""
    parts = path.split("/")
    if (
        not path
        or "\\" in path
        or len(parts) > MAX_DEPTH + 1
        or any(p in ("", ".", "..") or not FILE_PART.match(p) for p in parts)
    ):
        raise PathEscape(f"{path!r} is not a path inside the skill's folder")
    if path in (SKILL_FILE, f"{SKILL_FILE}.proposed"):
        raise PathEscape(f"{path!r} is the skill's own file")
    return path


class Skill(BaseModel):
    """A parsed SKILL.md."""

    name: str
    description: str
    body: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    allowed_tools: list[str] = Field(default_factory=list)
    """The tools it uses (`allowed-tools`): a declaration, never a grant of any policy."""

    @property
    def source(self) -> str | None:
        value = self.metadata.get("source")
        return value if value in SOURCES else None


def validate_slug(slug: str) -> str:
    """Return `slug` if it is a valid Agent Skills name, else raise InvalidSlug."""
    if not isinstance(slug, str) or not 1 <= len(slug) <= MAX_NAME or not SLUG_RE.match(slug):
        raise InvalidSlug(
            f"invalid skill name {slug!r}: 1-{MAX_NAME} characters of a-z, 0-9 and single hyphens"
        )
    return slug


def validate_description(description: str) -> str:
    """Return a stripped description of 1-1024 characters, else raise InvalidSkill."""
    text = (description or "").strip()
    if not 1 <= len(text) <= MAX_DESCRIPTION:
        raise InvalidSkill(f"description must be 1-{MAX_DESCRIPTION} characters")
    return text


def content_hash(text: str) -> str:
    """SHA-256 of a file's text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_skill(text: str, *, expect_name: str | None = None) -> Skill:
    """Parse SKILL.md text; the frontmatter name must match the folder when given."""
    match = _FRONTMATTER.match(text.lstrip("\ufeff"))
    if not match:
        raise InvalidSkill("SKILL.md must start with YAML frontmatter between --- lines")
    import yaml  # here: a warm start parses no skill file, so it never loads yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader is ~10x faster
    try:
        front = yaml.load(match.group(1), Loader=loader) or {}
    except yaml.YAMLError as exc:
        raise InvalidSkill(f"frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(front, dict):
        raise InvalidSkill("frontmatter must be a mapping")
    name = validate_slug(str(front.get("name", "")))
    if expect_name is not None and name != expect_name:
        raise InvalidSkill(f"frontmatter name {name!r} differs from folder {expect_name!r}")
    metadata = front.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InvalidSkill("metadata must be a mapping")
    return Skill(
        name=name,
        description=validate_description(str(front.get("description", ""))),
        body=match.group(2).strip("\n"),
        metadata=metadata,
        allowed_tools=parse_allowed_tools(front.get("allowed-tools")),
    )


def parse_allowed_tools(value: Any) -> list[str]:
    """`allowed-tools` as the Agent Skills field writes it (space-separated) or as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        names = value.replace(",", " ").split()
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value if v.strip()]
    else:
        raise InvalidSkill("allowed-tools must be a list of tool names")
    if any(len(n) > 128 or not TOOL_NAME.match(n) for n in names):
        raise InvalidSkill("allowed-tools holds a name that is not a tool name")
    return list(dict.fromkeys(names))


def render_skill(skill: Skill) -> str:
    """SKILL.md text for a skill: frontmatter, a blank line, the body."""
    front: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if skill.allowed_tools:
        front["allowed-tools"] = " ".join(skill.allowed_tools)
    if skill.metadata:
        front["metadata"] = skill.metadata
    import yaml

    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=1000).strip()
    return f"---\n{head}\n---\n\n{skill.body.strip()}\n"


@dataclass(frozen=True)
class SkillFile:
    """A skill's SKILL.md as a scan found it: checked to be inside the root."""

    slug: str
    path: str
    size: int
    mtime_ns: int


class SkillLibrary:
    """The skills folder of the data dir."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_for(self, slug: str, filename: str = SKILL_FILE) -> Path:
        """The path of a file in a skill folder, checked to stay inside the root."""
        validate_slug(slug)
        if filename != Path(filename).name or filename in ("", ".", ".."):
            raise PathEscape(f"invalid file name {filename!r}")
        root = self.root.resolve()
        path = self.root / slug / filename
        if not path.resolve().is_relative_to(root):
            raise PathEscape(f"{slug}/{filename} resolves outside the skills folder")
        return path

    def exists(self, slug: str, filename: str = SKILL_FILE) -> bool:
        return self.path_for(slug, filename).is_file()

    def read_text(self, slug: str, filename: str = SKILL_FILE) -> str:
        """Raw text of a skill file."""
        path = self.path_for(slug, filename)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise SkillNotFound(f"no skill {slug!r}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidSkill(f"cannot read {slug}/{filename}: {exc}") from exc

    def read(self, slug: str) -> Skill:
        """Parse a live skill."""
        return parse_skill(self.read_text(slug), expect_name=slug)

    def slugs(self) -> list[str]:
        """Folder names that hold a SKILL.md and are valid slugs, sorted."""
        return [f.slug for f in self.scan()]

    def scan(self, filename: str = SKILL_FILE) -> list[SkillFile]:
        """Every skill file of `slugs()` (or staged file, or other `filename` of the skill
        folders), with its size and modification time, by slug."""
        return self.scan_each((filename,))[filename]

    def scan_each(self, filenames: Sequence[str]) -> dict[str, list[SkillFile]]:
        """`scan` of each of `filenames`, in one pass over the skill folders.

        A real folder holding a real file cannot lead outside the root, so one `lstat`
        settles it; only where a link is involved is the path resolved (`path_for`).
        """
        found: dict[str, list[SkillFile]] = {name: [] for name in filenames}
        if not self.root.is_dir():
            return found
        for entry in os.scandir(self.root):
            if not (SLUG_RE.match(entry.name) and len(entry.name) <= MAX_NAME):
                continue
            folder = entry.is_dir(follow_symlinks=False)
            for filename in filenames:
                try:
                    path = entry.path + os.sep + filename  # strings: even os.path.join costs
                    info = os.lstat(path) if folder else None
                    if info is None or stat.S_ISLNK(info.st_mode):
                        resolved = self.path_for(entry.name, filename)  # where does it lead?
                        path, info = str(resolved), resolved.stat()
                except (OSError, PathEscape):
                    continue
                if stat.S_ISREG(info.st_mode):
                    file = SkillFile(entry.name, path, info.st_size, info.st_mtime_ns)
                    found[filename].append(file)
        for files in found.values():
            files.sort(key=lambda f: f.slug)
        return found

    def read_file(self, file: SkillFile) -> str:
        """Raw text of a file a scan found."""
        try:
            with open(file.path, encoding="utf-8") as handle:
                return handle.read()
        except FileNotFoundError as exc:
            raise SkillNotFound(f"no skill {file.slug!r}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            name = os.path.basename(file.path)
            raise InvalidSkill(f"cannot read {file.slug}/{name}: {exc}") from exc

    def file_path(self, slug: str, relpath: str) -> Path:
        """A file beside a skill's SKILL.md (`scripts/run.sh`), checked to stay in its folder."""
        folder = self.path_for(slug).parent
        path = folder.joinpath(*check_relpath(relpath).split("/"))
        if not path.resolve().is_relative_to(folder.resolve()):
            raise PathEscape(f"{slug}/{relpath} resolves outside the skill's folder")
        return path

    def write_file(self, slug: str, relpath: str, text: str) -> Path:
        """Write a file beside a skill's SKILL.md atomically (its folders made as needed)."""
        path = self.file_path(slug, relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file_path(slug, relpath)  # a folder may have been a link created meanwhile
        _write_atomic(path, text)
        return path

    def files_beside(self, slug: str) -> dict[str, str]:
        """The text files beside a skill's SKILL.md by path (links and dot files left out)."""
        folder = self.path_for(slug).parent
        found: dict[str, str] = {}
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink() or not path.is_file() or rel.startswith(SKILL_FILE):
                continue
            try:
                found[check_relpath(rel)] = path.read_text(encoding="utf-8")
            except (PathEscape, OSError, UnicodeDecodeError):
                continue
        return found

    def write_text(self, slug: str, text: str, filename: str = SKILL_FILE) -> Path:
        """Write a skill file atomically (temp file, fsync, os.replace)."""
        path = self.path_for(slug, filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path_for(slug, filename)  # the folder may have been a link created meanwhile
        _write_atomic(path, text)
        return path


def _write_atomic(path: Path, text: str) -> None:
    """Temp file beside `path`, fsync, os.replace."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
