"""`skillgate backup` and `skillgate restore`: database, skills and persona in one .tar.gz.

The database is copied with SQLite's online backup API, so a backup is
consistent while the gateway keeps serving. Restoring refuses to overwrite a
data dir that has data unless forced, and then moves the old data aside.
"""

from __future__ import annotations

import json
import os
import posixpath
import tarfile
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from gateway import __version__
from gateway.config import Settings
from gateway.errors import ConfigError
from gateway.store.backup import online_copy

DB_NAME = "skillgate.db"
MANIFEST = "skillgate-backup.json"
PERSONA = "persona.md"
SKILLS = "skills"
TOP_LEVEL = {DB_NAME, MANIFEST, PERSONA, SKILLS}


@dataclass
class Summary:
    """What an archive holds."""

    path: Path
    schema_versions: list[int] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    persona: bool = False
    created: str | None = None

    def describe(self) -> str:
        schema = f"schema v{max(self.schema_versions)}" if self.schema_versions else "schema ?"
        parts = [f"{DB_NAME} ({schema})", f"{SKILLS}/ ({len(self.skills)} skills)"]
        if self.persona:
            parts.append(PERSONA)
        return ", ".join(parts)


def _sqlite_only(settings: Settings) -> None:
    if settings.shared_database:
        raise ConfigError(
            "SKILLGATE_DATABASE_URL is set: back up PostgreSQL with pg_dump and the shared"
            " skills volume with your file backups (docs/SCALING.md); this command archives a"
            " SQLite data dir"
        )


def archive_path(dest: Path, now: datetime | None = None) -> Path:
    """`dest` itself, or a timestamped file inside it when it is a directory."""
    if dest.is_dir():
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
        return dest / f"skillgate-{stamp}.tar.gz"
    return dest


def create_backup(settings: Settings, dest: Path, *, now: datetime | None = None) -> Summary:
    """Write the archive atomically (mode 0600: it holds conversations)."""
    _sqlite_only(settings)
    target = archive_path(dest, now).absolute()
    if not target.parent.is_dir():
        raise ConfigError(f"{target.parent} does not exist")
    skills_dir, persona = settings.skills_dir, settings.data_dir / PERSONA
    with tempfile.TemporaryDirectory(prefix=".skillgate-backup-", dir=target.parent) as tmp:
        snapshot = Path(tmp) / DB_NAME
        summary = Summary(target, schema_versions=online_copy(settings.db_path, snapshot))
        summary.skills = sorted(p.parent.name for p in skills_dir.glob("*/SKILL.md"))
        summary.persona = persona.is_file()
        summary.created = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        manifest = Path(tmp) / MANIFEST
        manifest.write_text(
            json.dumps(
                {
                    "skillgate": __version__,
                    "created": summary.created,
                    "schema_versions": summary.schema_versions,
                    "skills": summary.skills,
                },
                indent=2,
            )
        )
        partial = Path(tmp) / "partial.tar.gz"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            tar.add(manifest, arcname=MANIFEST)
            tar.add(snapshot, arcname=DB_NAME)
            if skills_dir.is_dir():
                tar.add(skills_dir, arcname=SKILLS)
            if summary.persona:
                tar.add(persona, arcname=PERSONA)
        os.replace(partial, target)
    return summary


def _members(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """The archive's entries, refusing anything that is not ours or would leave the data dir."""
    members = tar.getmembers()
    for member in members:
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts or path.parts[0] not in TOP_LEVEL:
            raise ConfigError(f"{archive}: unexpected entry {member.name!r}")
        if not (member.isfile() or member.isdir() or member.issym()):
            raise ConfigError(f"{archive}: {member.name!r} is not a file or folder")
        if member.issym():
            target = posixpath.normpath(posixpath.join(path.parent.as_posix(), member.linkname))
            if posixpath.isabs(member.linkname) or target.split("/")[0] == "..":
                raise ConfigError(f"{archive}: link {member.name!r} points outside the data dir")
    if DB_NAME not in {m.name for m in members}:
        raise ConfigError(f"{archive} is not a skillgate backup: it has no {DB_NAME}")
    return members


def _read_manifest(tar: tarfile.TarFile) -> dict[str, Any]:
    try:
        raw = tar.extractfile(MANIFEST)
    except KeyError:
        return {}
    return dict(json.loads(raw.read())) if raw is not None else {}


def restore_backup(
    settings: Settings, archive: Path, *, force: bool = False, now: datetime | None = None
) -> tuple[Summary, Path | None]:
    """Unpack into the data dir; with `force`, existing data goes to pre-restore-<time>/."""
    _sqlite_only(settings)
    data = settings.data_dir
    try:
        tar = tarfile.open(archive, "r:gz")  # noqa: SIM115 - closed by the `with` below
    except (OSError, tarfile.TarError) as exc:
        raise ConfigError(f"cannot read {archive}: {exc}") from exc
    with tar:
        members = _members(tar, archive)
        manifest = _read_manifest(tar)
        ours = [data / n for n in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", SKILLS, PERSONA)]
        present = [p for p in ours if p.exists()]
        aside = None
        if present and not force:
            names = ", ".join(p.name for p in present)
            raise ConfigError(
                f"{data} already holds {names}: stop the gateway and add --force to move them aside"
            )
        if present:
            stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
            aside = data / f"pre-restore-{stamp}"
            aside.mkdir()
            for path in present:
                os.replace(path, aside / path.name)
        data.mkdir(parents=True, exist_ok=True)
        wanted = [m for m in members if m.name != MANIFEST]
        # Python >= 3.11.4 also applies its own "data" safety filter.
        safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(data, members=wanted, **safe)
    _give_to_owner(data, [data / m.name for m in wanted])
    summary = Summary(
        archive,
        schema_versions=list(manifest.get("schema_versions", [])),
        skills=sorted(p.parent.name for p in settings.skills_dir.glob("*/SKILL.md")),
        persona=(data / PERSONA).is_file(),
        created=manifest.get("created"),
    )
    return summary, aside


def _give_to_owner(data: Path, paths: list[Path]) -> None:
    """Run as root, hand the restored files to the data dir's owner (the service user)."""
    if os.geteuid() != 0:
        return
    owner = data.stat()
    for path in paths:
        os.lchown(path, owner.st_uid, owner.st_gid)
