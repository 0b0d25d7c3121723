"""What the gateway makes of a message's content, for every channel alike.

- Text, and a caption on media, is answered; voice notes, photos and documents are read
  into the turn (`attachments`), other media (video, animations) keep to their caption.
- A place (its title and address, else its coordinates) and a sticker (its text or
  keywords, Telegram's emoji) are passed on as text.
- Media with no usable words that the gateway does not read gets one short notice in a 1:1
  chat, once per album (Telegram media group, LINE image set); in a group only when the
  message is addressed to the bot. An album the gateway reads is answered once, from its
  first item (where Telegram puts the caption).
- An edited message is not answered again: the answer given stays, and the edit does not
  count as a new message (it would answer the same question twice).
"""

from __future__ import annotations

from gateway.conversation.models import Message

AS_TEXT = {"location": "Shared a place", "sticker": "Sent a sticker"}
"""Media whose platform details are passed on as text, with how the text starts."""
ALBUM_META = "album:{channel}:{chat}"
"""The last album of a chat that was answered or got the notice (items of one album arrive in
a row)."""
MEDIA_META = "{channel}:media:{chat}"
"""A channel's notes on a chat's recent files (LINE: their names, so that a quote of one can
be read): a JSON list of objects, each naming its sender under `MEDIA_SENDER`. They go with
the chat on /forget of its user and with retention; in a group, /forget takes out the notes
of the forgotten member (and any naming no sender)."""
MEDIA_SENDER = "from"


def words(message: Message) -> str | None:
    """The text the model gets: the text or caption, else a place's or sticker's words."""
    if message.text is not None and message.text.strip():
        return message.text
    label = AS_TEXT.get(message.media or "")
    details = [d.strip() for d in message.details if d and d.strip()]
    if label is None or not details:
        return None
    return f"[{label}: {', '.join(details)}]"


def album_key(message: Message) -> str:
    return ALBUM_META.format(channel=message.chat.channel, chat=message.chat.chat_id)
