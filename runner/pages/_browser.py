"""Open a page in headless Chromium and say what it rendered.

A small Chrome DevTools Protocol client over aiohttp's websocket client, so checking the HTML
report in a real browser needs no new dependency (selenium and playwright download their own
browsers from outside). :func:`check_page` starts Debian's ``chromium`` with a throw-away
profile, loads one file, counts its tables, images and SVG references, keeps every console
error, runs an optional script, takes a screenshot, and always ends the browser and removes
the profile, whatever happened.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import math
import os
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import aiohttp

from runner._errors import RunnerError

Json = dict[str, Any]
T = TypeVar("T")

ENV_BINARY = "GROUNDBENCH_CHROMIUM"
BINARIES = ("chromium", "chromium-browser", "google-chrome")
INSTALL = "install Debian's chromium package (apt-get install chromium) or set GROUNDBENCH_CHROMIUM"
# Chromium cannot paint a screenshot taller than its largest texture: a longer page is cut here.
MAX_SCREENSHOT_HEIGHT = 16_384

# --no-sandbox: Chromium refuses to start as root (CI) with its sandbox on. The rest keep a
# headless run quiet and offline: no first-run pages, no background fetches, no GPU, and
# shared memory in /tmp because containers often give /dev/shm 64 MB.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-port=0",
)
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# A self-contained page loads only from itself; anything else is recorded and refused.
_LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


class BrowserError(RunnerError):
    """Chromium is missing, could not start, failed, or took longer than it was given."""


_GONE = (
    "Chromium closed its DevTools connection during the check (did it crash?): "
    "try `chromium --headless=new --no-sandbox --dump-dom FILE` by hand"
)


@dataclass(frozen=True)
class PageCounts:
    """What a page holds at one moment, counted in the browser.

    ``broken_images`` are ``<img>`` elements that did not load (``!complete`` or no natural
    width), lazy ones included (they are made eager first). ``shown_images`` are loaded
    ``<img>`` elements laid out on the page (not under ``display: none``): the thumbnails a
    reader sees. ``missing_refs`` are ``<use>`` elements whose ``href`` names no element of the
    document (an external reference counts as missing: the page must be self-contained).
    ``missing_links`` are the local files that ``<a href>`` points to and that do not exist.
    """

    title: str
    tables: int
    filled_tables: int
    images: int
    broken_images: int
    shown_images: int
    svg_images: int
    broken_svg_images: int
    uses: int
    missing_refs: int
    links: int
    missing_links: tuple[str, ...]


@dataclass(frozen=True)
class PageCheck(PageCounts):
    """A page as Chromium loaded it: its counts after the load, and what went wrong.

    ``console_errors`` holds every error the page reported, in order, one line each:
    ``console.error``/``console.assert`` calls, uncaught exceptions, and the browser's own
    errors (a resource that failed to load, with its URL). ``external_requests`` are the
    non-local URLs the page asked for (refused, so none reached the network). ``script_result``
    is what the caller's script returned (JSON) and ``after_script`` the counts after it ran;
    ``screenshot`` the PNG written, if one was asked for (of the page as loaded, before the
    script).
    """

    console_errors: tuple[str, ...] = ()
    external_requests: tuple[str, ...] = ()
    script_result: object = None
    after_script: PageCounts | None = None
    screenshot: Path | None = None


def find_chromium() -> Path | None:
    """The Chromium to use: ``$GROUNDBENCH_CHROMIUM`` if set, else the first on ``PATH``.

    Returns ``None`` when there is none, so that callers (and tests) can say so.
    """
    chosen = os.environ.get(ENV_BINARY)
    if chosen:
        found = shutil.which(chosen)
        return Path(found) if found else None
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return Path(found)
    return None


def check_page(
    page: Path,
    *,
    screenshot: Path | None = None,
    full_page: bool = True,
    script: str | None = None,
    width: int = 1280,
    height: int = 900,
    timeout_s: float = 60.0,
    query: str = "",
) -> PageCheck:
    """Load ``page`` from disk in headless Chromium and count what it rendered.

    Parameters
    ----------
    page
        An HTML file; it is opened as ``file://`` + its absolute path.
    screenshot
        Where to write a PNG of the page as loaded (before ``script``), ``width`` CSS pixels
        wide (one device pixel each).
    full_page
        The whole page (up to :data:`MAX_SCREENSHOT_HEIGHT` pixels) rather than the viewport.
    script
        The body of an async JavaScript function run after the load and the first count
        (e.g. to change a filter and go to the next page); what it returns (JSON) is kept as
        :attr:`PageCheck.script_result`, and the page is counted again after it.
    width, height
        The viewport, in CSS pixels.
    timeout_s
        The bound on the whole check, from starting the browser to the last count.
    query
        A query string the page is opened with (``gallery=worst``: what a link to a filtered
        gallery carries), without its ``?``.

    Raises
    ------
    BrowserError
        No Chromium, it exited early, the page could not be opened, the script threw, or the
        check took longer than ``timeout_s``. No Chromium process is left running either way.
    """
    return asyncio.run(
        check_page_async(
            page,
            screenshot=screenshot,
            full_page=full_page,
            script=script,
            width=width,
            height=height,
            timeout_s=timeout_s,
            query=query,
        )
    )


async def check_page_async(
    page: Path,
    *,
    screenshot: Path | None = None,
    full_page: bool = True,
    script: str | None = None,
    width: int = 1280,
    height: int = 900,
    timeout_s: float = 60.0,
    query: str = "",
) -> PageCheck:
    """:func:`check_page` inside a running event loop."""
    if not page.is_file():
        raise BrowserError(f"{page} is not a file: write the page before checking it")
    binary = find_chromium()
    if binary is None:
        raise BrowserError(f"no Chromium found (looked for {', '.join(BINARIES)}): {INSTALL}")
    deadline = _Deadline(timeout_s)
    profile = Path(tempfile.mkdtemp(prefix="groundbench-chromium-"))
    try:
        async with (
            _launch(binary, profile, deadline) as endpoint,
            _Cdp.connect(endpoint, deadline) as cdp,
        ):
            tab = await deadline.within(_Tab.open(cdp, width, height), "opening a tab")
            address = page.resolve().as_uri() + (f"?{query}" if query else "")
            return await _inspect(tab, address, script, screenshot, full_page, deadline)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


async def _inspect(
    tab: _Tab,
    address: str,
    script: str | None,
    screenshot: Path | None,
    full_page: bool,
    deadline: _Deadline,
) -> PageCheck:
    """Load ``address`` (a file's) in ``tab``, count it, photograph it, run the caller's
    script and count again."""
    name = urlsplit(address).path.rsplit("/", 1)[-1]
    await deadline.within(tab.load(address), f"loading {name}")
    counts = await deadline.within(tab.count(), "counting the page")
    if screenshot is not None:
        png = await deadline.within(tab.screenshot(full_page), "taking the screenshot")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(png)
    result: object = None
    after: PageCounts | None = None
    if script is not None:
        result = await deadline.within(tab.execute(script), "running the check's script")
        after = await deadline.within(tab.count(), "counting the page after the script")
    return PageCheck(
        **vars(counts),
        console_errors=tuple(tab.errors),
        external_requests=tuple(tab.external),
        script_result=result,
        after_script=after,
        screenshot=screenshot,
    )


class _Deadline:
    """One bound shared by every wait of a check; each wait names what it was waiting for."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = asyncio.get_running_loop().time() + seconds

    async def within(self, awaitable: Awaitable[T], what: str) -> T:
        left = self.end - asyncio.get_running_loop().time()
        try:
            return await asyncio.wait_for(awaitable, max(left, 0.0))
        except TimeoutError:
            raise BrowserError(
                f"Chromium took longer than {self.seconds:g} s ({what}): give the check more "
                "time (timeout_s) or look for a script in the page that never ends"
            ) from None


@contextlib.asynccontextmanager
async def _launch(binary: Path, profile: Path, deadline: _Deadline) -> AsyncIterator[str]:
    """Start Chromium on ``profile``; yield its DevTools endpoint; end it and its children.

    It runs in its own process group, so that killing the group ends the renderers and the
    crash handler it started too, even when the browser itself has already gone.
    """
    try:
        process = await asyncio.create_subprocess_exec(
            str(binary),
            *FLAGS,
            f"--user-data-dir={profile}",
            "about:blank",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        raise BrowserError(f"could not start {binary}: {error}; {INSTALL}") from error
    log: list[str] = []
    try:
        endpoint = await deadline.within(_endpoint(process, log), "starting")
        # Chromium keeps writing to stderr; a pipe nobody reads would fill and stall it.
        drain = asyncio.create_task(_drain(process, log))
        try:
            yield endpoint
        finally:
            # The DevTools client has asked it to close: a clean close ends its children too.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 5.0)
            await _cancelled(drain)
    finally:
        await _kill(process)


async def _endpoint(process: asyncio.subprocess.Process, log: list[str]) -> str:
    """Read Chromium's stderr up to the line naming its DevTools websocket (loopback only)."""
    assert process.stderr is not None
    async for raw in process.stderr:
        line = raw.decode(errors="replace").strip()
        _keep(log, line)
        match = _LISTENING.search(line)
        if match is None:
            continue
        endpoint = match.group(1)
        if urlsplit(endpoint).hostname not in _LOOPBACK:
            raise BrowserError(f"Chromium listens on {endpoint}, not on loopback: not using it")
        return endpoint
    code = await process.wait()
    last = log[-1] if log else "nothing on stderr"
    raise BrowserError(f"Chromium exited ({code}) before it was ready: {last}; {INSTALL}")


async def _drain(process: asyncio.subprocess.Process, log: list[str]) -> None:
    assert process.stderr is not None
    async for raw in process.stderr:
        _keep(log, raw.decode(errors="replace").strip())


def _keep(log: list[str], line: str) -> None:
    """Keep the last lines of Chromium's stderr, for the message when it fails."""
    if line:
        log.append(line)
        del log[:-20]


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill whatever is left of Chromium's process group, and reap the browser."""
    # The group outlives its leader while a child is alive, and Linux does not reuse the id
    # of a living group: killing it by the leader's id reaches only Chromium's processes.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


class _Cdp:
    """One DevTools websocket: commands matched to their replies, events to their handlers."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._next = 0
        self._pending: dict[int, tuple[str, asyncio.Future[Json]]] = {}
        self._closed = False
        self._handlers: dict[tuple[str, str | None], Callable[[Json], None]] = {}

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, endpoint: str, deadline: _Deadline) -> AsyncIterator[_Cdp]:
        """Connect to ``endpoint``; on leaving, ask the browser to close and hang up."""
        async with aiohttp.ClientSession() as session:
            # A screenshot of a tall page arrives as one message of tens of megabytes.
            opening = session.ws_connect(endpoint, max_msg_size=1 << 30)
            try:
                socket = await deadline.within(opening, "connecting to its DevTools")
            except aiohttp.ClientError as error:
                raise BrowserError(f"could not reach Chromium at {endpoint}: {error}") from error
            cdp = cls(socket)
            reader = asyncio.create_task(cdp._read())
            try:
                yield cdp
            finally:
                await cdp._hang_up(socket)
                await _cancelled(reader)

    async def _hang_up(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        """Ask the browser to close (it does not answer: it is gone), then close the socket."""
        with contextlib.suppress(Exception):
            await socket.send_str(json.dumps({"id": 0, "method": "Browser.close"}))
            await asyncio.wait_for(socket.close(), 2.0)

    async def send(
        self, method: str, params: Json | None = None, session: str | None = None
    ) -> Json:
        """Send one command and wait for its result; a protocol error raises BrowserError."""
        if self._closed:
            raise BrowserError(_GONE)
        self._next += 1
        message: Json = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        reply: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._pending[self._next] = (method, reply)
        try:
            await self._socket.send_str(json.dumps(message))
        except (aiohttp.ClientError, ConnectionError) as error:
            raise BrowserError(_GONE) from error
        return await reply

    def on(self, method: str, session: str | None, handler: Callable[[Json], None]) -> None:
        self._handlers[(method, session)] = handler

    async def _read(self) -> None:
        async for message in self._socket:
            if message.type is not aiohttp.WSMsgType.TEXT:
                break
            self._dispatch(json.loads(message.data))
        self._closed = True
        for _, reply in self._pending.values():
            if not reply.done():
                reply.set_exception(BrowserError(_GONE))

    def _dispatch(self, data: Json) -> None:
        if "id" in data:
            method, reply = self._pending.pop(data["id"], ("", None))
            if reply is None or reply.done():
                return
            if "error" in data:
                error = data["error"].get("message", data["error"])
                reply.set_exception(BrowserError(f"Chromium refused {method}: {error}"))
            else:
                reply.set_result(data.get("result", {}))
            return
        handler = self._handlers.get((data.get("method", ""), data.get("sessionId")))
        if handler is not None:
            handler(data.get("params", {}))


class _Tab:
    """One page of the browser, attached over a flat session, recording what goes wrong."""

    def __init__(self, cdp: _Cdp, session: str, width: int) -> None:
        self.cdp = cdp
        self.session = session
        self.width = width
        self.errors: list[str] = []
        self.external: list[str] = []

    @classmethod
    async def open(cls, cdp: _Cdp, width: int, height: int) -> _Tab:
        """A new blank tab, ``width`` × ``height`` CSS pixels at one device pixel each."""
        target = await cdp.send("Target.createTarget", {"url": "about:blank"})
        attached = await cdp.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        tab = cls(cdp, attached["sessionId"], width)
        await tab._listen()
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        await tab.send("Emulation.setDeviceMetricsOverride", metrics)
        return tab

    async def send(self, method: str, params: Json | None = None) -> Json:
        return await self.cdp.send(method, params, self.session)

    async def _listen(self) -> None:
        on = self.cdp.on
        on("Runtime.consoleAPICalled", self.session, self._console)
        on("Runtime.exceptionThrown", self.session, self._exception)
        on("Log.entryAdded", self.session, self._log)
        on("Network.requestWillBeSent", self.session, self._request)
        for domain in ("Runtime", "Log", "Page", "Network"):
            await self.send(f"{domain}.enable")
        # Refusing is a safeguard: the requests are recorded either way, so a Chromium that has
        # dropped this (experimental) command still checks the page.
        with contextlib.suppress(BrowserError):
            await self.send(
                "Network.setBlockedURLs", {"urls": ["http://*", "https://*", "ws*://*"]}
            )

    def _console(self, event: Json) -> None:
        if event.get("type") in ("error", "assert"):
            words = " ".join(_remote_text(arg) for arg in event.get("args", []))
            self.errors.append(f"console.{event['type']}: {words}")

    def _exception(self, event: Json) -> None:
        details = event.get("exceptionDetails", {})
        thrown = details.get("exception", {}).get("description") or details.get("text", "")
        where = (
            f" ({details['url']}:{details.get('lineNumber', 0) + 1})" if details.get("url") else ""
        )
        self.errors.append(f"exception: {str(thrown).splitlines()[0] if thrown else '?'}{where}")

    def _log(self, event: Json) -> None:
        entry = event.get("entry", {})
        if entry.get("level") == "error":
            where = f" ({entry['url']})" if entry.get("url") else ""
            self.errors.append(f"{entry.get('source', 'browser')}: {entry.get('text', '')}{where}")

    def _request(self, event: Json) -> None:
        url = str(event.get("request", {}).get("url", ""))
        if not url.startswith(_LOCAL_SCHEMES):
            self.external.append(url)

    async def load(self, url: str) -> None:
        """Navigate to ``url`` and wait for its load event (every image and script done)."""
        loaded = asyncio.Event()
        self.cdp.on("Page.loadEventFired", self.session, lambda _: loaded.set())
        navigation = await self.send("Page.navigate", {"url": url})
        if navigation.get("errorText"):
            raise BrowserError(f"Chromium could not open {url}: {navigation['errorText']}")
        await loaded.wait()

    async def count(self) -> PageCounts:
        """Count the page as it is now (waiting first for images still loading)."""
        found = await self._evaluate(_COUNT, "counting the page")
        local = found.pop("local_links")
        found["missing_links"] = tuple(sorted(url for url in local if not _file_exists(url)))
        return PageCounts(**found)

    async def execute(self, script: str) -> object:
        """Run ``script`` as the body of an async function; return what it returns."""
        return await self._evaluate(f"(async () => {{\n{script}\n}})()", "the check's script")

    async def _evaluate(self, expression: str, what: str) -> Any:
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        evaluated = await self.send("Runtime.evaluate", params)
        if "exceptionDetails" in evaluated:
            details = evaluated["exceptionDetails"]
            thrown = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{what} threw in the page: {str(thrown).splitlines()[0]}")
        return evaluated.get("result", {}).get("value")

    async def screenshot(self, full_page: bool) -> bytes:
        """The page as a PNG: the viewport, or the whole page up to the texture limit."""
        params: Json = {"format": "png"}
        if full_page:
            layout = await self.send("Page.getLayoutMetrics")
            size: Json = layout.get("cssContentSize") or layout["contentSize"]
            rows = max(1, min(math.ceil(size["height"]), MAX_SCREENSHOT_HEIGHT))
            clip = {"x": 0, "y": 0, "width": self.width, "height": rows, "scale": 1}
            params |= {"captureBeyondViewport": True, "clip": clip}
        shot = await self.send("Page.captureScreenshot", params)
        return base64.b64decode(shot["data"])


def _remote_text(value: Json) -> str:
    """A console argument as the console would print it."""
    for key in ("value", "unserializableValue", "description"):
        if key in value:
            return str(value[key])
    return str(value.get("type", "?"))


def _file_exists(url: str) -> bool:
    return Path(unquote(urlsplit(url).path)).exists()


# Runs in the page. Lazy images are made eager and awaited, so that an image the reader would
# scroll to counts as loaded or broken like any other. An SVG <image> has no load state to
# read, so its href is loaded again as an HTML image.
_COUNT = """(async () => {
  const images = [...document.images];
  for (const img of images) if (img.loading === 'lazy') img.loading = 'eager';
  await Promise.all(images.filter(img => !img.complete).map(img => new Promise(done => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
  })));
  const loaded = img => img.complete && img.naturalWidth > 0;
  const laidOut = el => el.getClientRects().length > 0;
  const href = el => el.getAttribute('href')
    ?? el.getAttributeNS('http://www.w3.org/1999/xlink', 'href') ?? '';
  const opens = src => new Promise(done => {
    const probe = new Image();
    probe.onload = () => done(probe.naturalWidth > 0);
    probe.onerror = () => done(false);
    probe.src = src;
  });
  const svgImages = [...document.querySelectorAll('svg image')];
  const svgOpened = await Promise.all(svgImages.map(
    el => href(el) ? opens(new URL(href(el), document.baseURI).href) : false));
  const uses = [...document.querySelectorAll('use')];
  const resolves = use => href(use).startsWith('#')
    && document.getElementById(href(use).slice(1)) !== null;
  const tables = [...document.querySelectorAll('table')];
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  return {
    title: document.title,
    tables: tables.length,
    filled_tables: tables.filter(t => [...t.tBodies].some(b => b.rows.length > 0)).length,
    images: images.length,
    broken_images: images.filter(img => !loaded(img)).length,
    shown_images: images.filter(img => loaded(img) && laidOut(img)).length,
    svg_images: svgImages.length,
    broken_svg_images: svgOpened.filter(ok => !ok).length,
    uses: uses.length,
    missing_refs: uses.filter(use => !resolves(use)).length,
    links: links.length,
    local_links: [...new Set(links.filter(url => url.startsWith('file:')))],
  };
})()"""
