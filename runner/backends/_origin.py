"""Where a key may go: the origin (scheme, host, port) of the backend's configured ``base_url``.

The experiment file says where a backend's key goes; nothing a store recorded or a provider
answered (a batch's recorded address, an upload URL) may send it anywhere else. Every wire
asks :meth:`Origin.admit` at the one place it attaches the key to a request, and sends to the
URL it admits.

URLs are read by yarl, the parser aiohttp connects by: urllib and yarl disagree on some
(``http://good\\@evil/``), and the origin checked must be the one connected to.

>>> Origin.of("https://API.example.com:443/v1") == Origin.of("https://api.example.com./x")
True
>>> str(Origin.of("http://[0:0::1]:8000/v1"))
'http://[::1]:8000'
"""

from __future__ import annotations

from dataclasses import dataclass

from yarl import URL

from runner.backends._errors import Fatal
from runner.backends._secrets import ApiKey, redact

SCHEMES = frozenset({"http", "https"})
SHOWN = 200  # characters of a refused address shown: a forged one may be any length


class OffOrigin(Fatal):
    """A keyed request to an address that is not the configured origin: refused unsent."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="off-origin", sent=False)


@dataclass(frozen=True)
class Origin:
    """An HTTP origin, normalised: scheme and host lowercased, the host's one trailing dot
    dropped (``example.com.`` is ``example.com``), IDNA hosts ASCII, IPv6 literals compressed,
    the default port (80, 443) written out."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str | URL) -> Origin:
        """The origin of ``url``.

        Raises
        ------
        OffOrigin
            ``url`` is not an ``http(s)://`` address with a host, or carries credentials
            (``user@``): no key goes to it.
        """
        parsed = _parsed(url)
        if parsed.user is not None or parsed.password is not None:
            raise OffOrigin(
                f"refused to send the key to {_shown(parsed)}: the address holds credentials "
                "(user@)"
            )
        scheme, host, port = parsed.scheme.lower(), parsed.raw_host, parsed.port
        if scheme not in SCHEMES or not host or port is None:
            raise OffOrigin(
                f"refused to send the key to {_shown(parsed)!r}: not an http:// or https:// "
                "address with a host"
            )
        return cls(scheme, host.lower().removesuffix("."), port)

    def admit(self, url: str | URL, key: ApiKey | None = None) -> URL:
        """``url``, parsed, if it is at this origin: the URL to send to.

        Raises
        ------
        OffOrigin
            ``url`` is at another origin (one line naming both, ``key`` redacted from it).
        """
        try:
            parsed = _parsed(url)
            theirs = Origin.of(parsed)
        except OffOrigin as exc:
            raise OffOrigin(
                redact(f"{exc.message}; the backend's base_url is at {self}", key)
            ) from None
        if theirs != self:
            raise OffOrigin(
                redact(
                    f"refused to send the key to {theirs}: the backend's base_url is at {self}, "
                    "and a key goes nowhere else; if that address is yours, set base_url to it",
                    key,
                )
            )
        return parsed

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = {"http": 80, "https": 443}.get(self.scheme)
        port = "" if self.port == default else f":{self.port}"
        return _cut(f"{self.scheme}://{host}{port}")


def _parsed(url: str | URL) -> URL:
    if isinstance(url, URL):
        return url
    try:
        return URL(url)
    except (ValueError, TypeError) as exc:
        shown = redact(_cut(str(url)))
        raise OffOrigin(f"refused to send the key to {shown!r}: not a URL ({exc})") from None


def _shown(url: URL) -> str:
    """The scheme and host of ``url``, never its credentials."""
    return redact(_cut(f"{url.scheme}://{url.raw_host or ''}"))


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN else text[:SHOWN] + "…"


__all__ = ["OffOrigin", "Origin"]
