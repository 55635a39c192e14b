"""Servers on loopback (port 0): one that answers every POST with a handler of the test's, and
a listener that counts whatever reaches it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serving_posts(handler: Handler) -> AsyncIterator[str]:
    """Serve ``handler`` for every POST path; yields the server's base URL."""
    app = web.Application()
    app.router.add_post("/{tail:.*}", handler)
    async with _served(app) as url:
        yield url


@dataclass
class Listener:
    """A server on loopback that answers every request with ``status`` and keeps what each
    asked: the tests count what reached it."""

    status: int = 401
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        self.seen.append((request.method, request.path_qs, dict(request.headers)))
        await request.read()
        return web.json_response({"error": {"message": "no"}}, status=self.status)

    def carried(self, secret: str) -> int:
        """How many of the requests held ``secret`` anywhere (path, query, a header)."""
        return sum(secret in f"{path} {headers}" for _, path, headers in self.seen)


@asynccontextmanager
async def listening(listener: Listener) -> AsyncIterator[str]:
    """Serve ``listener`` on loopback, port 0, for every method and path: its base URL."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", listener._answer)
    async with _served(app) as url:
        yield url


@asynccontextmanager
async def _served(app: web.Application) -> AsyncIterator[str]:
    """``app`` on loopback, port 0, for the block: its base URL."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
