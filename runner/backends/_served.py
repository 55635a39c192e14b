"""Which models a server of one's own serves: ``GET {base_url}/models``, read as OpenAI's
list-models response (``{"object": "list", "data": [{"id": …}, …]}``), which vLLM, SGLang,
Ollama and LM Studio all answer.

``groundbench check`` asks it of every backend whose provider keeps such a list
(:attr:`Provider.lists_models`) and refuses a configured model the server does not serve, in
one line naming the backend and a few models it does: a local server answers an unknown model
with a 404 (vLLM) or loads whatever it is told (Ollama pulls nothing, LM Studio loads on
demand), and a typo costs a run, not a call. A server with no list (a bare proxy answers 404
or 405) is said to have none, and the check goes on: its calls prove the model.

The request goes by the one HTTP exchange (:mod:`runner.backends._exchange`): the key, when
the backend has one, goes to the ``base_url`` origin only, no redirect is followed, the body
is read up to the backend's cap, and every id is redacted of the key and clipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.backends._errors import CallError, Transient
from runner.backends._exchange import Peer, exchange
from runner.backends._secrets import clip, one_line
from runner.backends._wire import load_json

NO_LIST_STATUSES = frozenset({404, 405})  # no such endpoint: the server keeps no list
SHOWN_MODELS = 5  # models named in the line that refuses one


async def served_models(peer: Peer, base_url: str) -> tuple[str, ...] | None:
    """The ids ``GET {base_url}/models`` lists, or ``None`` where the server has no such
    endpoint (404, 405).

    Raises
    ------
    CallError
        Any other failure: refused, unreachable, or a body that is no model list.
    """
    try:
        answer = await exchange(peer, "GET", base_url.rstrip("/") + "/models")
    except CallError as exc:
        if exc.status in NO_LIST_STATUSES:
            return None
        raise
    data = load_json(answer.body, "model list").get("data")
    if not isinstance(data, list):
        raise Transient("malformed model list: no 'data' array", status=answer.status)
    ids = (m.get("id") for m in data if isinstance(m, dict))
    return tuple(clip(i, peer.key) for i in ids if isinstance(i, str) and i)


@dataclass(frozen=True)
class ModelCheck:
    """What a server's model list says of one backend's configured model."""

    backend: str
    model: str
    base_url: str
    served: tuple[str, ...] | None = None  # None: no list (or it could not be read)
    error: str | None = None  # why the list could not be read, when it could not

    @property
    def refused(self) -> bool:
        """The server lists its models, and not this one."""
        return self.served is not None and self.model not in self.served

    def line(self) -> str | None:
        """One line for the user: the refusal, or a note that no list was read (``None``
        where the model is served)."""
        at = one_line(self.base_url)
        if self.error is not None:
            return (
                f"backend {self.backend}: could not list the models at {at}/models "
                f"({self.error}); its calls prove model {self.model!r}"
            )
        if self.served is None:
            return (
                f"backend {self.backend}: {at} has no /models list (404); its calls prove "
                f"model {self.model!r}"
            )
        if not self.refused:
            return None
        return (
            f"backend {self.backend}: model {self.model!r} is not served at {at} ({self.serving})"
        )

    @property
    def serving(self) -> str:
        """A few of the models the server lists, as the refusal names them."""
        served = self.served or ()
        if not served:
            return "it lists none"
        shown = ", ".join(repr(m) for m in served[:SHOWN_MODELS])
        more = f" and {len(served) - SHOWN_MODELS} more" if len(served) > SHOWN_MODELS else ""
        return f"it serves {shown}{more}; set model to the name the server gives"


async def check_model(peer: Peer, backend: str, model: str, base_url: str) -> ModelCheck:
    """What ``GET {base_url}/models`` says of ``model`` (see :class:`ModelCheck`); a failure
    to list is the check's note, never its error: the calls that follow say what is wrong."""
    try:
        served = await served_models(peer, base_url)
    except CallError as exc:
        return ModelCheck(backend, model, base_url, error=one_line(str(exc), peer.key))
    return ModelCheck(backend, model, base_url, served)


__all__ = ["ModelCheck", "check_model", "served_models"]
