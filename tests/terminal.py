"""A `skillgate` command in a pseudo-terminal, driven by keys and waited on by what it shows."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect

from tests.serve_process import TEST_DEFAULTS

DOWN, ENTER = "\x1b[B", "\r"
WAIT = 60  # generous: a busy 2-core machine starts Python slowly; a step takes about 1 s


class Terminal:
    """`skillgate ARGS` in a pseudo-terminal, waited on by what it shows."""

    def __init__(self, cwd: Path, env: dict[str, str], *args: str) -> None:
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "gateway.cli", *args],
            cwd=str(cwd),
            env={
                **os.environ,
                **TEST_DEFAULTS,
                **env,
                "PROMPT_TOOLKIT_NO_CPR": "1",
                "TERM": "xterm",
            },
            encoding="utf-8",
            dimensions=(50, 250),
            timeout=WAIT,
        )
        self.seen = ""

    async def shows(self, text: str) -> None:
        await self.child.expect_exact(text, async_=True)
        self.seen += self.child.before + self.child.after

    async def match(self, pattern: str) -> re.Match[str]:
        await self.child.expect(pattern, async_=True)
        self.seen += self.child.before
        match = self.child.match
        assert isinstance(match, re.Match)
        return match

    def press(self, *keys: str) -> None:
        for key in keys:
            self.child.send(key)

    def type(self, text: str) -> None:
        self.child.send(text + ENTER)

    async def ends(self) -> int:
        await self.child.expect(pexpect.EOF, async_=True)
        self.seen += self.child.before
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -1)
