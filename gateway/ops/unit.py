"""The systemd unit's idea of the data dir, next to the env file's: doctor warns when they differ.

systemd reads `EnvironmentFile=` after `Environment=`, so a `SKILLGATE_DATA_DIR` in the
env file wins over the unit's own, and a relative one (`./data`) is taken from the
unit's `WorkingDirectory=`. The operator's `skillgate` and the backup read the env file
from wherever they run. When these disagree, the service, the operator command and the
backup each use their own folder.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from gateway.operator import Check
from gateway.ops.init.envfile import read_values

DEFAULT_UNIT = Path("/etc/systemd/system/skillgate.service")
VAR = "SKILLGATE_DATA_DIR"


@dataclass(frozen=True)
class Unit:
    """The few [Service] lines that decide the service's data dir."""

    environment: dict[str, str]
    environment_files: list[Path]
    working_directory: Path | None


def read_unit(path: Path) -> Unit:
    """Environment=, EnvironmentFile= and WorkingDirectory= of the unit's [Service] section."""
    env: dict[str, str] = {}
    files: list[Path] = []
    workdir: Path | None = None
    section = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        key, sep, value = line.partition("=")
        if section != "[Service]" or not sep:
            continue
        key, value = key.strip(), value.strip()
        if key == "Environment":
            for word in shlex.split(value):
                name, _, val = word.partition("=")
                env[name] = val
        elif key == "EnvironmentFile" and value:
            files.append(Path(value.removeprefix("-")))
        elif key == "WorkingDirectory" and value:
            workdir = Path(value.removeprefix("-"))
    return Unit(env, files, workdir)


def check_service_data_dir(unit_path: Path, data_dir: Path) -> Check | None:
    """None without a unit; a warning when the unit, its env file and `data_dir` disagree."""
    if not unit_path.is_file():
        return None
    unit = read_unit(unit_path)
    from_unit = unit.environment.get(VAR)
    from_file, env_file = None, None
    for path in unit.environment_files:
        try:
            values = read_values(path)
        except OSError:
            continue
        if VAR in values:
            from_file, env_file = values[VAR], path
    base = unit.working_directory or Path("/")
    used = Path(from_file or from_unit or "./data")
    service_dir = used if used.is_absolute() else base / used
    name = f"the service ({unit_path.name})"
    if from_file is not None and from_unit is not None and Path(from_file) != Path(from_unit):
        return Check(
            "service data dir",
            "warn",
            f"{env_file} sets {VAR}={from_file}, which overrides the unit's {from_unit}"
            f" (systemd reads EnvironmentFile= last): {name} uses {service_dir}",
            f"set `{VAR}={from_unit}` in {env_file} (or remove that line)",
        )
    if service_dir.resolve() != data_dir.resolve():
        where = f" ({env_file})" if env_file else ""
        return Check(
            "service data dir",
            "warn",
            f"{name} uses {service_dir}{where}, this command {data_dir.resolve()}",
            f"run it as the service does: `skillgate --env-file {unit.environment_files[0]}"
            f" doctor`, and set {VAR}={service_dir} in that file"
            if unit.environment_files
            else f"set {VAR}={service_dir} where this command reads its settings",
        )
    return Check("service data dir", "ok", f"{name} and this command use {service_dir}")
