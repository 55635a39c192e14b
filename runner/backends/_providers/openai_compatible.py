"""A server of one's own behind an OpenAI-compatible Chat Completions endpoint: vLLM, SGLang,
Ollama, LM Studio (``vllm serve``, ``ollama serve``, …), usually an open-weights model on
local GPUs.

It has no endpoint of its own (``base_url`` is required: where the server listens) and needs
no key: most local servers take none, so a key is sent only where the backend names a variable
(``api_key_env``), and then only to the ``base_url`` origin, as every key. The model is named
as the server names it, and ``groundbench check`` lists ``GET {base_url}/models`` to refuse a
model the server does not serve (:mod:`runner.backends._served`).

Reasoning: none of its own. The servers differ (vLLM passes ``chat_template_kwargs`` to the
chat template, Ollama reads ``reasoning_effort``, others nothing), so no field is guessed: the
provider default (thinking ``on`` with no effort or budget) sends nothing, and every other
setting is refused when the backend is made. The output allowance is ``max_tokens`` (vLLM's
and Ollama's documented field), a backend's ``max_tokens_field`` switching it to
``max_completion_tokens`` for a server that reads only that.
"""

from __future__ import annotations

from typing import Any

from conditions import Thinking
from runner.backends._providers._base import Provider, refuse

NAME = "openai-compatible"
# A local server has no request quota: its throughput is bounded by max_concurrency (the
# batch the GPUs take at once), not by a rate. A million a minute binds nothing.
UNMETERED_REQUESTS_PER_MINUTE = 1e6


def thinking(t: Thinking) -> dict[str, Any]:
    if t.mode == "on" and t.effort is None and t.budget_tokens is None:
        return {}  # the server's (the chat template's) default: nothing to send
    raise refuse(
        NAME,
        "a thinking setting (off, an effort or a budget): servers spell it differently; "
        "only the server's default is sent",
    )


PROVIDER = Provider(
    NAME,
    "openai",
    None,  # where the server listens: the backend's base_url, always
    None,  # no key unless the backend names a variable
    thinking,
    default_requests_per_minute=UNMETERED_REQUESTS_PER_MINUTE,
    lists_models=True,
)
