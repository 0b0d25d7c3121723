"""Answers spoken: whether an answer is spoken, in which voice, and /voice.

Decided here once for every platform: an answer is spoken where text-to-speech is
configured (`Voicing`), the platform plays audio (`Capabilities.speech`, and for one that
fetches media by URL, a public https address to serve it from), the answer is a normal
one, and the user wants it: `/voice on` (every answer), `off` (none) or `auto`, the
default (answers to voice notes only). The voice is the one of the chat's language
(`SpeechSettings.voice_for`); an answer longer than TTS_MAX_CHARS is spoken up to whole
sentences within it, the rest stays text. The platform only renders `Reply.voice`. When
the speech server fails, the text goes out as ever and one notice says it was not spoken.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, Protocol

from gateway.config import QuotaSettings, SpeechSettings
from gateway.conversation.models import Profile
from gateway.core.models import ChatRef, Reply, Voice
from gateway.core.turn import QuotaSpend
from gateway.errors import SpeechFailed
from gateway.i18n import N_, Texts
from gateway.media.links import MediaLinks
from gateway.media.tts import Speaker, spoken_part
from gateway.usage import day_start, media_spend, utc_day

log = logging.getLogger(__name__)

VOICE_COMMAND = ("voice", N_("Hear my answers spoken: on, off, or auto (voice notes only)"))
MODES = ("on", "off", "auto")
DEFAULT_MODE = "auto"

VOICE_ON = N_("From now on I also speak my answers to you.")
VOICE_OFF = N_("From now on I answer you in text only.")
VOICE_AUTO = N_("From now on I speak my answers when you send me a voice note.")
VOICE_HOW = N_(
    "Your choice now: {mode}. Send /voice on to hear every answer, /voice off for text"
    " only, or /voice auto to hear answers to your voice notes."
)
VOICE_UNAVAILABLE = N_("Spoken answers are not turned on for this bot.")
VOICE_NO_SENDER = N_("I can't tell who sent this, so I can't keep a choice for you here.")
NOT_SPOKEN = N_("I could not speak this answer this time; it is here in text.")
SPOKEN_LIMIT = N_(
    "You have heard today's spoken answers; until 00:00 UTC my answers are in text only."
)
Spoken = Literal["spoken", "failed", "over"]
"""What became of an answer to be spoken: spoken, the server failed, or over the day's limit."""
CHOSEN = {"on": VOICE_ON, "off": VOICE_OFF, "auto": VOICE_AUTO}


class VoiceStore(Protocol):
    """Each user's /voice choice (`gateway.store.languages`; read with the chat's state), and
    the seconds spoken (`gateway.store.usage`)."""

    async def choose_voice(
        self, channel: str, user_id: str, mode: str | None, now: float | None = None
    ) -> None: ...

    async def spoken_by(self, channel: str, user_id: str, since: float) -> float: ...

    async def record_spoken(
        self, message_id: int, seconds: float, spent: QuotaSpend | None = None
    ) -> None: ...


@dataclass(frozen=True)
class Voicing:
    """Text-to-speech as the conversation uses it: the server, its settings, and the signed
    links LINE fetches audio from (None: no public https address to serve it at)."""

    speaker: Speaker
    settings: SpeechSettings
    links: MediaLinks | None = None


def over_flag(chat: ChatRef) -> str:
    """The day's flag of a user told their spoken seconds are used up (deleted by /forget)."""
    return f"spoken:{chat.channel}:{chat.user_id}"


def owner_of(chat: ChatRef) -> str:
    """Whose files a chat's spoken answers are (`MediaLinks`): its user, else the chat."""
    return f"{chat.channel}:{chat.user_id or chat.chat_id}"


class Voices:
    """What /voice keeps, and the spoken answer where one is wanted."""

    def __init__(
        self,
        profile: Profile,
        store: VoiceStore,
        voicing: Voicing | None,
        quotas: QuotaSettings,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.profile = profile
        self.store = store
        self.quotas = quotas
        self.clock = clock
        capabilities = profile.capabilities
        usable = voicing is not None and capabilities.speech is not None
        if usable and capabilities.media_by_link and voicing is not None and not voicing.links:
            log.warning(
                "%s: answers are not spoken there: it fetches audio by URL, and"
                " SKILLGATE_PUBLIC_URL is not an https address",
                profile.who,
            )
            usable = False
        self.voicing = voicing if usable else None

    def wanted(self, reply: Reply, mode: str | None, voice_note: bool) -> bool:
        """Whether `reply` is spoken for a user whose choice is `mode`."""
        if self.voicing is None or reply.kind != "normal" or not reply.text.strip():
            return False
        if reply.delivered_ids:
            return False  # part of it went out before a crash: the rest goes as it was
        chosen = mode if mode in MODES else DEFAULT_MODE
        return chosen == "on" or (chosen == "auto" and voice_note)

    async def speak(self, reply: Reply, chat: ChatRef, language: str, *, admin: bool) -> Spoken:
        """Put the spoken answer on `reply`, within the user's seconds a day (admins are
        exempt); "failed" (logged) when the server failed."""
        voicing = self.voicing
        audio_format = self.profile.capabilities.speech
        assert voicing is not None and audio_format is not None
        if not admin and await self._over(chat):
            return "over"
        settings = voicing.settings
        text = spoken_part(reply.text, settings.tts_max_chars)
        voice = settings.voice_for(language)
        try:
            speech = await voicing.speaker.speak(text, voice, audio_format)
        except SpeechFailed as exc:
            log.warning("%s: the answer was not spoken: %s", self.profile.who, exc)
            return "failed"
        url = None
        if self.profile.capabilities.media_by_link:
            assert voicing.links is not None
            suffix = ".ogg" if audio_format == "opus" else ".mp3"
            published = await asyncio.to_thread(
                voicing.links.publish, owner_of(chat), speech.audio, suffix
            )
            url = published.url
        reply.voice = Voice(audio=speech.audio, mime=speech.mime, seconds=speech.seconds, url=url)
        if reply.message_id is not None:
            await self.store.record_spoken(
                reply.message_id, speech.seconds, self._spent(chat, speech.seconds)
            )
        return "spoken"

    async def _over(self, chat: ChatRef) -> bool:
        """The user heard their day's spoken seconds already."""
        limit = self.quotas.user_spoken
        if limit is None or chat.user_id is None:
            return False
        now = self.clock()
        today = day_start(datetime.fromtimestamp(now, UTC).date())
        return await self.store.spoken_by(chat.channel, chat.user_id, today) >= limit

    def _spent(self, chat: ChatRef, seconds: float) -> QuotaSpend | None:
        """The spoken seconds' cost (TTS_PRICE_PER_MINUTE) in the day's counts, where counted."""
        cost = seconds / 60 * self.quotas.tts_price_per_minute
        if not self.quotas.limited:
            return None
        return media_spend(chat, utc_day(self.clock()), cost)

    async def command(self, chat: ChatRef, argument: str, texts: Texts, current: str | None) -> str:
        """/voice [on|off|auto]: keep the user's choice, or say what it is."""
        if self.voicing is None:
            return texts(VOICE_UNAVAILABLE)
        if chat.user_id is None:
            return texts(VOICE_NO_SENDER)
        choice = argument.strip().lower()
        if choice not in MODES:
            mode = current if current in MODES else DEFAULT_MODE
            return texts(VOICE_HOW, mode=mode)
        await self.store.choose_voice(chat.channel, chat.user_id, choice)
        return texts(CHOSEN[choice])
