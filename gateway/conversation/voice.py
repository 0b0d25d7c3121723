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
from dataclasses import dataclass
from typing import Protocol

from gateway.config import SpeechSettings
from gateway.conversation.models import Profile
from gateway.core.models import ChatRef, Reply, Voice
from gateway.errors import SpeechFailed
from gateway.i18n import N_, Texts
from gateway.media.links import MediaLinks
from gateway.media.tts import Speaker, spoken_part

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
CHOSEN = {"on": VOICE_ON, "off": VOICE_OFF, "auto": VOICE_AUTO}


class VoiceStore(Protocol):
    """Each user's /voice choice (`gateway.store.languages`; read with the chat's state)."""

    async def choose_voice(
        self, channel: str, user_id: str, mode: str | None, now: float | None = None
    ) -> None: ...


@dataclass(frozen=True)
class Voicing:
    """Text-to-speech as the conversation uses it: the server, its settings, and the signed
    links LINE fetches audio from (None: no public https address to serve it at)."""

    speaker: Speaker
    settings: SpeechSettings
    links: MediaLinks | None = None


class Voices:
    """What /voice keeps, and the spoken answer where one is wanted."""

    def __init__(self, profile: Profile, store: VoiceStore, voicing: Voicing | None) -> None:
        self.profile = profile
        self.store = store
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

    @property
    def enabled(self) -> bool:
        return self.voicing is not None

    def wanted(self, reply: Reply, mode: str | None, voice_note: bool) -> bool:
        """Whether `reply` is spoken for a user whose choice is `mode`."""
        if self.voicing is None or reply.kind != "normal" or not reply.text.strip():
            return False
        if reply.delivered_ids:
            return False  # part of it went out before a crash: the rest goes as it was
        chosen = mode if mode in MODES else DEFAULT_MODE
        return chosen == "on" or (chosen == "auto" and voice_note)

    async def speak(self, reply: Reply, chat: ChatRef, language: str) -> bool:
        """Put the spoken answer on `reply`; False (logged) when the server failed."""
        voicing = self.voicing
        assert voicing is not None
        audio_format = self.profile.capabilities.speech
        assert audio_format is not None
        settings = voicing.settings
        text = spoken_part(reply.text, settings.tts_max_chars)
        voice = settings.voice_for(language)
        try:
            speech = await voicing.speaker.speak(text, voice, audio_format)
        except SpeechFailed as exc:
            log.warning("%s: the answer was not spoken: %s", self.profile.who, exc)
            return False
        url = None
        if self.profile.capabilities.media_by_link:
            assert voicing.links is not None
            who = f"{chat.channel}:{chat.user_id or chat.chat_id}"
            suffix = ".ogg" if audio_format == "opus" else ".mp3"
            published = await asyncio.to_thread(voicing.links.publish, who, speech.audio, suffix)
            url = published.url
        reply.voice = Voice(audio=speech.audio, mime=speech.mime, seconds=speech.seconds, url=url)
        return True

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
