"""The origin check: a key goes to the configured base_url's scheme, host and port, and no
other, however the other address is spelt."""

from __future__ import annotations

import pytest

from runner.backends import ApiKey, OffOrigin, Origin

KEY = "sk-origin-test-0123456789abcdef"
GOOD = Origin.of("https://api.example.com/v1")


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/v1/batches/b1",
        "https://api.example.com:443/v1/files/f/content",  # the default port, written out
        "HTTPS://API.EXAMPLE.COM/v1",  # case
        "https://api.example.com./v1",  # one trailing dot: the same DNS name
        "https://api.example.com/other/path?q=1",  # another path on the same server
    ],
)
def test_the_same_origin_however_spelt_passes(url: str) -> None:
    assert str(GOOD.admit(url).host).rstrip(".").lower() == "api.example.com"


@pytest.mark.parametrize(
    "url",
    [
        "http://api.example.com/v1",  # scheme
        "https://api.example.com:8443/v1",  # port
        "https://api.example.com:80/v1",  # http's default port, on https
        "https://evil.example.com/v1",
        "https://api.example.com.evil.example/v1",  # the good name as a prefix
        "https://evil.example/api.example.com/v1",  # the good name in the path
        "https://api.example.com@evil.example/v1",  # the good name as a user name
        "https://evil.example#@api.example.com/v1",  # the good name after a fragment
        "https://api.example.com../v1",  # two trailing dots: another name
        "https://[::1]/v1",
        "ftp://api.example.com/v1",
        "/v1/batches",  # no host at all
        "https://api.example.com\\@evil.example/v1",  # urllib and yarl disagree: refused
    ],
)
def test_another_origin_is_refused_in_one_line_naming_both(url: str) -> None:
    with pytest.raises(OffOrigin) as refused:
        GOOD.admit(url, ApiKey(KEY))
    line = refused.value.message
    assert "\n" not in line and line.startswith("refused to send the key to ")
    assert "the backend's base_url is at https://api.example.com" in line
    assert refused.value.code == "off-origin" and not refused.value.sent


def test_the_refusal_names_both_origins_and_says_what_to_do() -> None:
    with pytest.raises(OffOrigin) as refused:
        GOOD.admit("http://127.0.0.1:8123/v1/batches/b1")
    assert refused.value.message == (
        "refused to send the key to http://127.0.0.1:8123: the backend's base_url is at "
        "https://api.example.com, and a key goes nowhere else; if that address is yours, set "
        "base_url to it"
    )


def test_credentials_in_the_address_are_refused_even_on_the_right_host_and_never_shown() -> None:
    with pytest.raises(OffOrigin) as refused:
        GOOD.admit("https://me:hunter2@api.example.com/v1")
    assert "hunter2" not in refused.value.message and "me:" not in refused.value.message


def test_ipv6_literals_are_compared_as_addresses() -> None:
    local = Origin.of("http://[::1]:8000/v1")
    assert local.admit("http://[0:0:0::1]:8000/v1/batches").port == 8000
    assert str(local) == "http://[::1]:8000"
    with pytest.raises(OffOrigin):
        local.admit("http://[::2]:8000/v1")
    with pytest.raises(OffOrigin):
        local.admit("http://127.0.0.1:8000/v1")


def test_default_ports_are_written_out_and_left_out_when_shown() -> None:
    assert Origin.of("http://h.example/") == Origin("http", "h.example", 80)
    assert Origin.of("https://h.example:443") == Origin("https", "h.example", 443)
    assert str(Origin("https", "h.example", 443)) == "https://h.example"
    assert str(Origin("http", "h.example", 8080)) == "http://h.example:8080"


def test_a_key_in_the_refused_address_is_redacted() -> None:
    with pytest.raises(OffOrigin) as refused:
        GOOD.admit(f"https://{KEY}.evil.example/v1", ApiKey(KEY))
    assert KEY not in refused.value.message and KEY[:12] not in refused.value.message


def test_a_forged_address_of_any_length_is_shown_cut() -> None:
    with pytest.raises(OffOrigin) as refused:
        GOOD.admit("https://" + "a" * 10_000 + ".example/v1")
    assert len(refused.value.message) < 600
