"""The web console as one sub-application: its pages, views, login and static files."""

from __future__ import annotations

from aiohttp import web

from gateway.admin import (
    console_pages,
    console_personas,
    console_tasks,
    console_tools,
    console_usage,
    console_views,
)
from gateway.admin.console import (
    CONSOLE,
    HERE,
    ConsoleState,
    guard,
    home,
    login,
    login_form,
    logout,
)


def console_app() -> web.Application:
    """The sub-application mounted at /admin (the JSON API lives beside it at /admin/api)."""
    app = web.Application(middlewares=[guard])
    app[CONSOLE] = ConsoleState()
    app.router.add_get("/", home, name="console.home")
    app.router.add_get("/login", login_form, name="console.login_form")
    app.router.add_post("/login", login, name="console.login")
    app.router.add_post("/logout", logout, name="console.logout")
    app.router.add_static("/static", HERE / "static", name="console.static")
    console_views.add_routes(app)
    console_pages.add_routes(app)
    console_usage.add_routes(app)
    console_personas.add_routes(app)
    console_tools.add_routes(app)
    console_tasks.add_routes(app)
    return app


def add_console(app: web.Application) -> None:
    """Mount the console on the main application."""
    app.add_subapp("/admin", console_app())
