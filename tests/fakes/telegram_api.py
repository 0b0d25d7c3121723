"""Recording fake of the Telegram Bot API, served over HTTP for the real python-telegram-bot client.

Point a bot at it with ``Bot(fake.token, base_url=fake.base_url)`` or
``Application.builder().token(fake.token).base_url(fake.base_url)``.

Parameter decoding: PTB sends every non-string parameter JSON-encoded inside its form
field and every string raw. The fake therefore keeps fields named in ``RAW_STRING_FIELDS``
raw and runs ``json.loads`` on every other field, keeping the raw string when that fails
or yields a string (PTB never JSON-encodes a string). So ``chat_id="123"`` is recorded as
``123``, ``reply_markup`` as a dict, ``disable_notification`` as a bool, ``text="42"``
stays ``"42"``. Uploaded files are recorded in ``Call.files`` and their content, decoded
as UTF-8, in ``Call.params[field]``.

The fake does not render formatting: a stored or returned message carries its text
exactly as sent (HTML tags included) and no ``entities``.

``sendMessageDraft`` (Bot API 9.3) is answered for private chats only, as Telegram does:
a group, supergroup or channel gets ``400 Bad Request: TEXTDRAFT_PEER_INVALID``. The
latest text of each draft is kept in ``drafts``; a draft is no message.

Files users sent are registered with ``add_file(file_id, content)``; ``getFile`` answers
their ``file_path`` (or Telegram's "file is too big" past 20 MB) and
``/file/bot<token>/<file_path>`` serves the bytes, as the Bot API does.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

# fmt: off
# Bot API parameters that are always strings, so never JSON-decoded.
RAW_STRING_FIELDS = frozenset({
    "action", "address", "business_connection_id", "callback_query_id", "caption", "currency",
    "custom_emoji_id", "custom_title", "description", "emoji", "error_message", "explanation",
    "explanation_parse_mode", "file_id", "first_name", "game_short_name", "inline_message_id",
    "invite_link", "ip_address", "language_code", "last_name", "message_effect_id", "name",
    "next_offset", "parse_mode", "payload", "phone_number", "pre_checkout_query_id",
    "provider_token", "query", "question", "question_parse_mode", "result_id", "secret_token",
    "shipping_query_id", "short_description", "start_parameter", "text", "title", "url", "vcard",
    "web_app_query_id",
})

# Tags Telegram accepts in parse_mode=HTML.
HTML_TAGS = frozenset({
    "a", "b", "blockquote", "code", "del", "em", "i", "ins", "pre", "s", "span", "strike",
    "strong", "tg-emoji", "tg-spoiler", "u",
})
# fmt: on
_HTML_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}

MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_PHOTO_UPLOAD = 10 * 1024 * 1024
"""The most a bot may upload as a photo (sendPhoto)."""
MAX_CALLBACK_ANSWER_LENGTH = 200
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
MAX_VOICE_UPLOAD = 50 * 1024 * 1024
"""The most a bot may upload (sendVoice, sendAudio, sendDocument)."""
"""The most getFile lets a bot download from the Bot API server."""
NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup"
    " are exactly the same as a current content and reply markup of the message"
)


@dataclass
class UploadedFile:
    """A file part of a multipart request."""

    filename: str | None
    content: bytes
    content_type: str | None


@dataclass
class Call:
    """One request received by the fake, in decoded form."""

    method: str
    params: dict[str, Any]
    at: float
    files: dict[str, UploadedFile] = field(default_factory=dict)
    # HTTP status the fake answered with; None while the request is still being handled.
    status: int | None = None


class ApiError(Exception):
    """A Bot API error reply (non-2xx status with ok=false)."""

    def __init__(
        self, status: int, description: str, parameters: dict[str, Any] | None = None
    ) -> None:
        super().__init__(description)
        self.status = status
        self.description = description
        self.parameters = parameters

    def payload(self) -> dict[str, Any]:
        """Return the JSON body Telegram sends for this error."""
        body: dict[str, Any] = {
            "ok": False,
            "error_code": self.status,
            "description": self.description,
        }
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def bad_request(detail: str) -> ApiError:
    """Return a 400 error with Telegram's "Bad Request: " prefix."""
    return ApiError(400, f"Bad Request: {detail}")


def decode_param(name: str, raw: str) -> Any:
    """Decode one form field the way PTB encoded it (see the module docstring)."""
    if name in RAW_STRING_FIELDS:
        return raw
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except ValueError:
        return raw
    return raw if isinstance(value, str) else value


def _reject_constant(name: str) -> Any:
    """Refuse NaN/Infinity so such raw strings stay strings."""
    raise ValueError(name)


def html_to_plain(text: str) -> str:
    """Return the visible text of Telegram HTML, raising ApiError where Telegram would."""
    data = text.encode()
    out = bytearray()
    stack: list[str] = []
    i = 0
    while i < len(data):
        char = data[i : i + 1]
        if char == b"&":
            end = data.find(b";", i, i + 10)
            name = data[i + 1 : end].decode(errors="replace") if end > 0 else ""
            if name in _HTML_ENTITIES:
                out += _HTML_ENTITIES[name].encode()
                i = end + 1
                continue
        if char != b"<":
            out += char
            i += 1
            continue
        start = i
        if data[i + 1 : i + 2] == b"/":
            if not stack:
                raise _entities_error(f"Unexpected end tag at byte offset {start}")
            end = data.find(b">", i)
            if end < 0:
                raise _entities_error(f"Unclosed end tag at byte offset {start}")
            name = data[i + 2 : end].strip().lower().decode(errors="replace")
            # "</>" closes the innermost tag, as in Telegram.
            if name and name != stack[-1]:
                raise _entities_error(
                    f"Unmatched end tag at byte offset {start},"
                    f' expected "</{stack[-1]}>", found "</{name}>"'
                )
            stack.pop()
            i = end + 1
            continue
        end = i + 1
        while end < len(data) and data[end : end + 1] not in (b" ", b"\t", b"\n", b"\r", b">"):
            end += 1
        if end == len(data):
            raise _entities_error(f"Unclosed start tag at byte offset {start}")
        name = data[i + 1 : end].lower().decode(errors="replace")
        if name not in HTML_TAGS:
            raise _entities_error(f'Unsupported start tag "{name}" at byte offset {start}')
        close = data.find(b">", end)
        if close < 0:
            raise _entities_error(f"Unclosed start tag at byte offset {start}")
        stack.append(name)
        i = close + 1
    if stack:
        raise _entities_error(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return out.decode(errors="replace")


def _entities_error(detail: str) -> ApiError:
    """Return the 400 Telegram answers for unparsable formatting."""
    return bad_request(f"can't parse entities: {detail}")


def _utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def _chat_json(chat_id: int | str, chat_type: str | None = None) -> dict[str, Any]:
    """Return a Chat object for an id, inferring the type from its sign when not given."""
    if isinstance(chat_id, str):
        # "@channelusername" targets a public channel or supergroup.
        return {
            "id": -1001000000000 - len(chat_id),
            "type": chat_type or "channel",
            "username": chat_id[1:],
        }
    if chat_type is None:
        chat_type = (
            "private" if chat_id > 0 else "supergroup" if chat_id < -1000000000000 else "group"
        )
    chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
    if chat_type == "private":
        chat["first_name"] = "User"
    else:
        chat["title"] = "Test chat"
    return chat


def _markup_or_none(markup: Any) -> Any:
    """The inline keyboard a message keeps, or None.

    Telegram stores only inline keyboards on a message: an empty one, and the markups aimed
    at the user's client (ForceReply, reply keyboards), never show up in a returned Message.
    """
    if not isinstance(markup, dict) or not markup.get("inline_keyboard"):
        return None
    return markup


def _check_markup(markup: Any) -> None:
    """Validate inline keyboard callback_data like Telegram does."""
    if not isinstance(markup, dict):
        return
    for row in markup.get("inline_keyboard") or []:
        for button in row:
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= 64:
                raise bad_request("BUTTON_DATA_INVALID")


class FakeTelegramAPI:
    """In-process Bot API server that records requests and keeps minimal chat state."""

    def __init__(
        self,
        token: str = "123456:TEST-TOKEN",
        bot_username: str = "skillgate_test_bot",
        bot_id: int = 123456,
    ) -> None:
        self.token = token
        self.bot_username = bot_username
        self.bot_id = bot_id
        self.reads_group_messages = False
        self.chat_admins: dict[int, set[int]] = {}
        """Who administers each group (getChatMember says "administrator"); others are members."""
        """getMe's can_read_all_group_messages: False while privacy mode is on."""
        self.base_url = ""
        self.calls: list[Call] = []
        self.unknown_calls: list[Call] = []
        self.unauthorized_requests = 0
        self.messages: dict[tuple[int | str, int], dict[str, Any]] = {}
        self.commands: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.drafts: dict[tuple[int | str, int], str] = {}
        self.webhook_url = ""
        self.webhook_secret_token: str | None = None
        self.webhook_max_connections = 40
        self.webhook_allowed_updates: list[str] | None = None
        self.pending_update_count = 0
        self.last_error_date: int | None = None
        self.last_error_message: str | None = None
        # getUpdates waits at most this long so tests never sit in a real 10 s long poll.
        self.long_poll_cap = 1.0
        self._updates: list[dict[str, Any]] = []
        # Files users sent: file_id -> (file_path, content); file_path -> downloads served.
        self.files: dict[str, tuple[str, bytes]] = {}
        self.photos: list[bytes] = []
        """Every image uploaded by sendPhoto, in order."""
        self.downloads: list[str] = []
        self.endless: dict[str, int] = {}
        """file_path -> bytes streamed: a host that never ends the file (`add_file(endless=)`)."""
        self.downloads_open = asyncio.Event()
        self.downloads_open.set()
        """Cleared: downloads wait (requests are counted) until it is set again."""
        self.downloading = self.most_downloading = 0
        self._last_message_id: dict[int | str, int] = defaultdict(int)
        # Scripted failures per method, in order; None lets one call through.
        self._failures: dict[str, deque[ApiError | None]] = defaultdict(deque)
        self._delays: dict[str, float] = {}
        self._recorded = asyncio.Condition()
        self._update_pushed = asyncio.Event()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._handlers = {
            "getMe": self._get_me,
            "getChatMember": self._get_chat_member,
            "sendMessage": self._send_message,
            "sendMessageDraft": self._send_message_draft,
            "sendChatAction": self._send_chat_action,
            "answerCallbackQuery": self._answer_callback_query,
            "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "deleteMessage": self._delete_message,
            "sendDocument": self._send_document,
            "sendPhoto": self._send_photo,
            "sendVoice": self._send_voice,
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "getWebhookInfo": self._get_webhook_info,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "getUpdates": self._get_updates,
            "getFile": self._get_file,
        }

    async def start(self) -> None:
        """Serve on 127.0.0.1 on a free port and set base_url."""
        self._closing.clear()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/bot"

    async def close(self) -> None:
        """Release pending long polls and delays, then stop the server."""
        self._closing.set()
        self._update_pushed.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeTelegramAPI:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ---- test-facing helpers -------------------------------------------------------------

    @property
    def bot_user(self) -> dict[str, Any]:
        """The bot's User object as returned by getMe."""
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": "Test Bot",
            "username": self.bot_username,
            "can_join_groups": True,
            "can_read_all_group_messages": self.reads_group_messages,
            "supports_inline_queries": False,
        }

    def calls_of(self, method: str) -> list[Call]:
        """Return the recorded calls of one method in arrival order."""
        return [call for call in self.calls if call.method == method]

    def sent_texts(self, chat_id: int | str | None = None) -> list[str]:
        """Return texts of successful sendMessage calls, optionally for one chat."""
        return [
            call.params.get("text", "")
            for call in self.calls_of("sendMessage")
            if call.status == 200 and (chat_id is None or call.params.get("chat_id") == chat_id)
        ]

    def message(self, chat_id: int | str, message_id: int) -> dict[str, Any]:
        """Return the current state of a sent message (a Bot API Message dict)."""
        try:
            return self.messages[(chat_id, message_id)]
        except KeyError:
            known = sorted(mid for cid, mid in self.messages if cid == chat_id)
            raise KeyError(
                f"no message {message_id} in chat {chat_id!r}; known ids: {known}"
            ) from None

    def fail_next(
        self,
        method: str,
        status: int,
        description: str,
        *,
        retry_after: int | None = None,
        times: int = 1,
        after: int = 0,
    ) -> None:
        """Answer `times` calls of `method` with an error, after letting `after` calls through."""
        parameters = {"retry_after": retry_after} if retry_after is not None else None
        self._failures[method].extend(None for _ in range(after))
        self._failures[method].extend(
            ApiError(status, description, parameters) for _ in range(times)
        )

    def set_delay(self, method: str, seconds: float) -> None:
        """Hold every answer to `method` for `seconds` (0 removes the delay)."""
        if seconds > 0:
            self._delays[method] = seconds
        else:
            self._delays.pop(method, None)

    def add_file(
        self, file_id: str, content: bytes, *, file_path: str | None = None, endless: bool = False
    ) -> None:
        """A file a user sent, as getFile and the file download serve it; `endless`: getFile
        says `content`'s size, but the download streams without end."""
        path = file_path or f"documents/file_{len(self.files)}"
        self.files[file_id] = (path, content)
        if endless:
            self.endless[path] = 0

    def push_update(self, update: dict[str, Any]) -> None:
        """Queue an update for getUpdates."""
        self._updates.append(update)
        self._update_pushed.set()

    async def wait_for(self, method: str, count: int = 1, timeout: float = 5.0) -> list[Call]:
        """Wait until `count` calls of `method` were answered and return the first `count`."""

        def answered() -> bool:
            return len([c for c in self.calls_of(method) if c.status is not None]) >= count

        try:
            async with asyncio.timeout(timeout), self._recorded:
                await self._recorded.wait_for(answered)
        except TimeoutError:
            raise AssertionError(self._timeout_report(method, count, timeout)) from None
        return self.calls_of(method)[:count]

    def _timeout_report(self, method: str, count: int, timeout: float) -> str:
        """Describe what was recorded, for a failed wait_for."""
        got = len(self.calls_of(method))
        seen = ", ".join(f"{c.method}->{c.status}" for c in self.calls) or "nothing"
        report = (
            f"timed out after {timeout}s waiting for {count} {method} call(s), got {got};"
            f" recorded: {seen}"
        )
        if self.unknown_calls:
            report += f"; unimplemented methods: {sorted({c.method for c in self.unknown_calls})}"
        if self.unauthorized_requests:
            report += f"; {self.unauthorized_requests} request(s) used a wrong token"
        return report

    # ---- HTTP plumbing -------------------------------------------------------------------

    async def _download(self, request: web.Request) -> web.StreamResponse:
        """GET /file/bot<token>/<file_path>: the bytes of a file getFile named."""
        if request.match_info["token"] != self.token:
            self.unauthorized_requests += 1
            return web.Response(status=401)
        path = request.match_info["path"]
        self.downloads.append(path)
        self.downloading += 1
        self.most_downloading = max(self.most_downloading, self.downloading)
        try:
            await self.downloads_open.wait()
            if path in self.endless:
                return await self._stream_for_ever(request, path)
            for known, content in self.files.values():
                if known == path:
                    return web.Response(body=content, content_type="application/octet-stream")
            return web.Response(status=404)
        finally:
            self.downloading -= 1

    async def _stream_for_ever(self, request: web.Request, path: str) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await response.prepare(request)
        chunk = b"\0" * 65536
        try:
            while self.endless[path] < 1 << 30:  # a bound for the fake itself: 1 GB
                await response.write(chunk)
                self.endless[path] += len(chunk)
        except (ConnectionError, RuntimeError):
            pass  # the reader hung up
        return response

    async def _handle(self, request: web.Request) -> web.Response:
        """Record, optionally delay or fail, and answer one Bot API request."""
        if request.match_info["token"] != self.token:
            self.unauthorized_requests += 1
            return web.json_response(ApiError(401, "Unauthorized").payload(), status=401)
        method = request.match_info["method"]
        params, files = await self._read_params(request)
        call = Call(method, params, time.monotonic(), files)
        self.calls.append(call)
        delay = self._delays.get(method)
        if delay:
            await self._sleep(delay)
        try:
            failure = self._failures[method].popleft() if self._failures[method] else None
            if failure is not None:
                raise failure
            handler = self._handlers.get(method)
            if handler is None:
                self.unknown_calls.append(call)
                raise ApiError(404, "Not Found")
            result = handler(call)
            if asyncio.iscoroutine(result):
                result = await result
            status, body = 200, {"ok": True, "result": result}
        except ApiError as error:
            status, body = error.status, error.payload()
        except Exception as error:
            # Malformed input the fake does not model: answer (PTB raises NetworkError) rather
            # than leave the call unanswered and a wait_for hanging until its timeout.
            error_body = ApiError(500, f"Internal Server Error: fake failed: {error!r}")
            status, body = 500, error_body.payload()
        call.status = status
        async with self._recorded:
            self._recorded.notify_all()
        return web.json_response(body, status=status)

    async def _read_params(
        self, request: web.Request
    ) -> tuple[dict[str, Any], dict[str, UploadedFile]]:
        """Decode query and form fields; keep file parts separately."""
        params: dict[str, Any] = {k: decode_param(k, v) for k, v in request.query.items()}
        files: dict[str, UploadedFile] = {}
        if request.method == "POST" and request.can_read_body:
            for name, value in (await request.post()).items():
                if isinstance(value, web.FileField):
                    content = value.file.read()
                    files[name] = UploadedFile(value.filename, content, value.content_type)
                    params[name] = content.decode(errors="replace")
                else:
                    params[name] = decode_param(name, str(value))
        return params, files

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but return early when the fake is closing."""
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            pass

    # ---- message state -------------------------------------------------------------------

    def _new_message(self, params: dict[str, Any], **content: Any) -> dict[str, Any]:
        """Store and return a new message sent by the bot into params["chat_id"]."""
        chat_id = self._require(params, "chat_id")
        self._last_message_id[chat_id] += 1
        message: dict[str, Any] = {
            "message_id": self._last_message_id[chat_id],
            "date": int(time.time()),
            "chat": _chat_json(chat_id),
            "from": self.bot_user,
        }
        if params.get("message_thread_id") is not None:
            message["message_thread_id"] = params["message_thread_id"]
            message["is_topic_message"] = True
        message.update({k: v for k, v in content.items() if v is not None})
        self.messages[(chat_id, message["message_id"])] = message
        return message

    def _stored(self, params: dict[str, Any], not_found: str) -> dict[str, Any]:
        """Return the stored message addressed by chat_id and message_id."""
        key = (self._require(params, "chat_id"), self._require(params, "message_id"))
        if key not in self.messages:
            raise bad_request(not_found)
        return self.messages[key]

    @staticmethod
    def _require(params: dict[str, Any], name: str) -> Any:
        """Return a mandatory parameter or answer Telegram's "... is empty"."""
        value = params.get(name)
        if value is None or value == "":
            raise bad_request(f"{name} is empty")
        return value

    @staticmethod
    def _check_text(
        params: dict[str, Any], key: str = "text", limit: int = MAX_TEXT_LENGTH
    ) -> str | None:
        """Validate a text or caption field and return it."""
        text = params.get(key)
        if text is None and key != "text":
            return None
        text = "" if text is None else str(text)
        visible = (
            html_to_plain(text) if str(params.get("parse_mode", "")).upper() == "HTML" else text
        )
        if key == "text" and not visible.strip():
            raise bad_request("message text is empty")
        if len(visible) > limit:
            raise bad_request(
                "message is too long" if key == "text" else "message caption is too long"
            )
        return text

    # ---- Bot API methods -----------------------------------------------------------------

    def _get_me(self, call: Call) -> dict[str, Any]:
        return self.bot_user

    def _get_chat_member(self, call: Call) -> dict[str, Any]:
        chat_id = int(self._require(call.params, "chat_id"))
        user_id = int(self._require(call.params, "user_id"))
        user = _user_json(user_id, None, "Member")
        if user_id not in self.chat_admins.get(chat_id, set()):
            return {"status": "member", "user": user}
        flags = (
            "can_be_edited",
            "is_anonymous",
            "can_manage_chat",
            "can_delete_messages",
            "can_manage_video_chats",
            "can_restrict_members",
            "can_promote_members",
            "can_change_info",
            "can_invite_users",
            "can_post_stories",
            "can_edit_stories",
            "can_delete_stories",
        )
        return {"status": "administrator", "user": user, **dict.fromkeys(flags, False)}

    def _send_message(self, call: Call) -> dict[str, Any]:
        text = self._check_text(call.params)
        _check_markup(call.params.get("reply_markup"))
        return self._new_message(
            call.params, text=text, reply_markup=_markup_or_none(call.params.get("reply_markup"))
        )

    def _send_message_draft(self, call: Call) -> bool:
        chat_id = self._require(call.params, "chat_id")
        draft_id = self._require(call.params, "draft_id")
        if _chat_json(chat_id)["type"] != "private":
            raise bad_request("TEXTDRAFT_PEER_INVALID")
        if not isinstance(draft_id, int) or draft_id == 0:
            raise bad_request("draft_id must be non-zero")
        text = str(call.params.get("text") or "")
        visible = (
            html_to_plain(text)
            if str(call.params.get("parse_mode", "")).upper() == "HTML"
            else text
        )
        if len(visible) > MAX_TEXT_LENGTH:
            raise bad_request("message is too long")
        self.drafts[(chat_id, draft_id)] = text
        return True

    def draft_texts(self, chat_id: int | str | None = None) -> list[str]:
        """Texts of the successful sendMessageDraft calls, optionally for one chat."""
        return [
            str(call.params.get("text", ""))
            for call in self.calls_of("sendMessageDraft")
            if call.status == 200 and (chat_id is None or call.params.get("chat_id") == chat_id)
        ]

    def _send_chat_action(self, call: Call) -> bool:
        self._require(call.params, "chat_id")
        self._require(call.params, "action")
        return True

    def _answer_callback_query(self, call: Call) -> bool:
        self._require(call.params, "callback_query_id")
        if len(str(call.params.get("text", ""))) > MAX_CALLBACK_ANSWER_LENGTH:
            raise bad_request("MESSAGE_TOO_LONG")
        return True

    def _edit_message_text(self, call: Call) -> dict[str, Any] | bool:
        text = self._check_text(call.params)
        markup = call.params.get("reply_markup")
        _check_markup(markup)
        if call.params.get("inline_message_id"):
            return True
        message = self._stored(call.params, "message to edit not found")
        # Telegram drops the inline keyboard when an edit does not repeat it.
        markup = _markup_or_none(markup)
        if message.get("text") == text and message.get("reply_markup") == markup:
            raise bad_request(NOT_MODIFIED)
        message["text"] = text
        self._set_markup(message, markup)
        return message

    def _edit_message_reply_markup(self, call: Call) -> dict[str, Any] | bool:
        markup = call.params.get("reply_markup")
        _check_markup(markup)
        if call.params.get("inline_message_id"):
            return True
        message = self._stored(call.params, "message to edit not found")
        markup = _markup_or_none(markup)
        if message.get("reply_markup") == markup:
            raise bad_request(NOT_MODIFIED)
        self._set_markup(message, markup)
        return message

    @staticmethod
    def _set_markup(message: dict[str, Any], markup: Any) -> None:
        """Apply an edit's keyboard and stamp the edit date."""
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(time.time())

    def _delete_message(self, call: Call) -> bool:
        message = self._stored(call.params, "message to delete not found")
        del self.messages[(call.params["chat_id"], message["message_id"])]
        return True

    def _send_voice(self, call: Call) -> dict[str, Any]:
        """sendVoice: an uploaded file (multipart) or a file_id; a voice message is OGG/Opus
        (MP3 and M4A play too), at most 50 MB; caption at most 1024 characters."""
        self._require(call.params, "chat_id")
        caption = self._check_text(call.params, "caption", MAX_CAPTION_LENGTH)
        _check_markup(call.params.get("reply_markup"))
        upload = call.files.get("voice")
        if upload is None:
            file_id = str(self._require(call.params, "voice"))
            voice: dict[str, Any] = {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "duration": int(call.params.get("duration") or 0),
            }
        else:
            content = upload.content
            if not content:
                raise bad_request("file must be non-empty")
            if len(content) > MAX_VOICE_UPLOAD:
                raise ApiError(413, "Request Entity Too Large")
            ogg_opus = content[:4] == b"OggS" and b"OpusHead" in content[:128]
            if not (ogg_opus or content[:3] == b"ID3" or content[:1] == b"\xff"):
                raise bad_request("wrong type of the web page content")
            file_id = f"VOICE{len(self.calls)}"
            voice = {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "duration": int(call.params.get("duration") or 0),
                "mime_type": "audio/ogg" if ogg_opus else "audio/mpeg",
                "file_size": len(content),
            }
        return self._new_message(
            call.params,
            voice=voice,
            caption=caption,
            reply_markup=_markup_or_none(call.params.get("reply_markup")),
        )

    def _send_document(self, call: Call) -> dict[str, Any]:
        self._require(call.params, "chat_id")
        caption = self._check_text(call.params, "caption", MAX_CAPTION_LENGTH)
        _check_markup(call.params.get("reply_markup"))
        upload = call.files.get("document")
        if upload is None:
            file_id = str(self._require(call.params, "document"))
            document: dict[str, Any] = {"file_id": file_id, "file_unique_id": f"u-{file_id}"}
        else:
            if not upload.content:
                raise bad_request("file must be non-empty")
            file_id = f"DOC{len(self.calls)}"
            document = {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "file_name": upload.filename,
                "mime_type": upload.content_type,
                "file_size": len(upload.content),
            }
        return self._new_message(
            call.params,
            document=document,
            caption=caption,
            reply_markup=_markup_or_none(call.params.get("reply_markup")),
        )

    def _send_photo(self, call: Call) -> dict[str, Any]:
        """sendPhoto: an uploaded image (multipart, at most 10 MB; JPEG, PNG or WebP) or a
        file_id; caption at most 1024 characters."""
        self._require(call.params, "chat_id")
        caption = self._check_text(call.params, "caption", MAX_CAPTION_LENGTH)
        _check_markup(call.params.get("reply_markup"))
        upload = call.files.get("photo")
        if upload is None:
            file_id = str(self._require(call.params, "photo"))
            size = 0
        else:
            content = upload.content
            if not content:
                raise bad_request("file must be non-empty")
            if len(content) > MAX_PHOTO_UPLOAD:
                raise bad_request("PHOTO_INVALID_DIMENSIONS")
            image = content[:8] == b"\x89PNG\r\n\x1a\n" or content[:3] == b"\xff\xd8\xff"
            if not (image or (content[:4] == b"RIFF" and content[8:12] == b"WEBP")):
                raise bad_request("IMAGE_PROCESS_FAILED")
            file_id = f"PHOTO{len(self.calls)}"
            size = len(content)
            self.photos.append(content)
        photo = [
            {
                "file_id": file_id,
                "file_unique_id": f"u-{file_id}",
                "width": 64,
                "height": 64,
                "file_size": size,
            }
        ]
        return self._new_message(
            call.params,
            photo=photo,
            caption=caption,
            reply_markup=_markup_or_none(call.params.get("reply_markup")),
        )

    def _get_file(self, call: Call) -> dict[str, Any]:
        file_id = str(self._require(call.params, "file_id"))
        if file_id not in self.files:
            raise bad_request("wrong file_id or the file is temporarily unavailable")
        path, content = self.files[file_id]
        if len(content) > MAX_DOWNLOAD_BYTES:
            raise bad_request("file is too big")
        return {
            "file_id": file_id,
            "file_unique_id": f"u-{file_id}",
            "file_size": len(content),
            "file_path": path,
        }

    def _set_webhook(self, call: Call) -> bool:
        url = str(call.params.get("url", ""))
        if url and not url.startswith("https://"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        self.webhook_url = url
        self.webhook_secret_token = call.params.get("secret_token")
        self.webhook_max_connections = call.params.get("max_connections", 40)
        self.webhook_allowed_updates = call.params.get("allowed_updates")
        if call.params.get("drop_pending_updates"):
            self._drop_pending()
        return True

    def _delete_webhook(self, call: Call) -> bool:
        self.webhook_url = ""
        self.webhook_secret_token = None
        self.webhook_allowed_updates = None
        if call.params.get("drop_pending_updates"):
            self._drop_pending()
        return True

    def _drop_pending(self) -> None:
        """Forget queued updates, as drop_pending_updates does."""
        self._updates.clear()
        self.pending_update_count = 0

    def _get_webhook_info(self, call: Call) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.webhook_url,
            "has_custom_certificate": False,
            "pending_update_count": self.pending_update_count,
        }
        if self.webhook_url:
            info["max_connections"] = self.webhook_max_connections
            if self.webhook_allowed_updates is not None:
                info["allowed_updates"] = self.webhook_allowed_updates
        if self.last_error_date is not None:
            info["last_error_date"] = self.last_error_date
        if self.last_error_message is not None:
            info["last_error_message"] = self.last_error_message
        return info

    @staticmethod
    def _commands_key(params: dict[str, Any]) -> tuple[str, str]:
        """Key command lists by scope and language, as Telegram does."""
        scope = params.get("scope") or {"type": "default"}
        return json.dumps(scope, sort_keys=True), str(params.get("language_code", ""))

    def _set_my_commands(self, call: Call) -> bool:
        commands = call.params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise bad_request("commands is invalid")
        for command in commands:
            name = str(command.get("command", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise bad_request("command description is invalid")
        self.commands[self._commands_key(call.params)] = commands
        return True

    def _get_my_commands(self, call: Call) -> list[dict[str, Any]]:
        return self.commands.get(self._commands_key(call.params), [])

    def _delete_my_commands(self, call: Call) -> bool:
        self.commands.pop(self._commands_key(call.params), None)
        return True

    async def _get_updates(self, call: Call) -> list[dict[str, Any]]:
        if self.webhook_url:
            raise ApiError(
                409,
                "Conflict: can't use getUpdates method while webhook is active;"
                " use deleteWebhook to delete the webhook first",
            )
        offset = int(call.params.get("offset") or 0)
        limit = min(max(int(call.params.get("limit") or 100), 1), 100)
        wait = min(float(call.params.get("timeout") or 0), self.long_poll_cap)
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            # A positive offset confirms every update below it; a negative one keeps the
            # last -offset updates.
            if offset > 0:
                self._updates[:] = [u for u in self._updates if u["update_id"] >= offset]
            elif offset < 0:
                del self._updates[:offset]
            if self._updates or self._closing.is_set():
                return self._updates[:limit]
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return []
            self._update_pushed.clear()
            try:
                async with asyncio.timeout(remaining):
                    await self._update_pushed.wait()
            except TimeoutError:
                pass


# ---- builders for incoming updates ---------------------------------------------------------


def _user_json(user_id: int, username: str | None, first_name: str) -> dict[str, Any]:
    """Return a human User object."""
    user: dict[str, Any] = {
        "id": user_id,
        "is_bot": False,
        "first_name": first_name,
        "language_code": "en",
    }
    if username:
        user["username"] = username
    return user


def mention_entity(text: str, username: str) -> dict[str, Any]:
    """Return the mention entity for "@username" inside text (offsets in UTF-16 units)."""
    handle = "@" + username.lstrip("@")
    index = text.find(handle)
    if index < 0:
        raise ValueError(f"{handle!r} does not occur in {text!r}")
    return {"type": "mention", "offset": _utf16_len(text[:index]), "length": _utf16_len(handle)}


def make_text_update(
    update_id: int,
    text: str,
    *,
    chat_id: int = 1001,
    user_id: int = 1001,
    chat_type: str = "private",
    username: str | None = "alice",
    first_name: str = "Alice",
    message_id: int | None = None,
    entities: list[dict[str, Any]] | None = None,
    reply_to_message: dict[str, Any] | None = None,
    message_thread_id: int | None = None,
    is_topic_message: bool | None = None,
) -> dict[str, Any]:
    """Return an Update carrying a text message from a user (message_id defaults to update_id)."""
    user = _user_json(user_id, username, first_name)
    chat = _chat_json(chat_id, chat_type)
    if chat_type == "private":
        chat.update(first_name=first_name, **({"username": username} if username else {}))
    if is_topic_message:
        chat["is_forum"] = True
    if entities is None and text.startswith("/"):
        command = text.split(maxsplit=1)[0]
        entities = [{"type": "bot_command", "offset": 0, "length": _utf16_len(command)}]
    message: dict[str, Any] = {
        "message_id": update_id if message_id is None else message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": user,
        "text": text,
    }
    if entities:
        message["entities"] = entities
    if reply_to_message is not None:
        message["reply_to_message"] = reply_to_message
    if message_thread_id is not None:
        message["message_thread_id"] = message_thread_id
    if is_topic_message is not None:
        message["is_topic_message"] = is_topic_message
    return {"update_id": update_id, "message": message}


def make_media_update(
    update_id: int,
    *,
    chat_id: int = 1001,
    user_id: int = 1001,
    chat_type: str = "private",
    **fields: Any,
) -> dict[str, Any]:
    """Return an Update carrying a message without text from a user: `fields` (photo, voice,
    caption...) as given, a None field left out."""
    update = make_text_update(update_id, "", chat_id=chat_id, user_id=user_id, chat_type=chat_type)
    del update["message"]["text"]
    update["message"].update({k: v for k, v in fields.items() if v is not None})
    return update


def make_callback_update(
    update_id: int,
    data: str,
    *,
    chat_id: int = 1001,
    user_id: int = 1001,
    message_id: int = 1,
    message_text: str = "...",
    reply_markup: dict[str, Any] | None = None,
    username: str | None = "alice",
    first_name: str = "Alice",
    bot_id: int = 123456,
    bot_username: str = "skillgate_test_bot",
) -> dict[str, Any]:
    """Return an Update carrying a button press on a message the bot sent."""
    message: dict[str, Any] = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": _chat_json(chat_id),
        "from": {"id": bot_id, "is_bot": True, "first_name": "Test Bot", "username": bot_username},
        "text": message_text,
    }
    if reply_markup is not None:
        message["reply_markup"] = reply_markup
    return {
        "update_id": update_id,
        "callback_query": {
            "id": str(4000000000000000000 + update_id),
            "from": _user_json(user_id, username, first_name),
            "chat_instance": str(-7000000000000000000 - chat_id),
            "data": data,
            "message": message,
        },
    }
