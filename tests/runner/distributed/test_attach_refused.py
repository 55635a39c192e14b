"""``monitor`` and ``sql`` give nothing to a note they cannot trust, and wait a bounded time on
a server that does not answer: each is one line, before Ray is let at the address.

No Ray starts here: every refusal comes before ``ray.init``. The servers are the test's own,
on loopback; what they received is what is asserted.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from conditions import DataRoot
from runner.distributed import _ray
from runner.distributed._address import here, note_path, write_note
from runner.distributed._ray import WAIT_VARIABLE
from tests.runner.console import run_console
from tests.runner.distributed.conftest import write_experiment

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty SETTINGS frame (RFC 9113 §6.5)
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SETTINGS  # an HTTP/2 client's opening


class _Listener:
    """A loopback server that keeps every byte each client sends; ``answers``: it opens each
    connection as a gRPC server does (its SETTINGS frame), so a gRPC client goes on to send
    its request and headers (a Ray token among them); else it says nothing."""

    def __init__(self, server: socket.socket, answers: bool) -> None:
        self.server = server
        self.address = f"127.0.0.1:{server.getsockname()[1]}"
        self.answers = answers
        self.connections = 0
        self.received: list[bytes] = []
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def serve(self) -> None:
        self.server.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            thread = threading.Thread(target=self._keep, args=(conn,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _keep(self, conn: socket.socket) -> None:
        with conn:
            if self.answers:
                conn.sendall(SETTINGS)
            conn.settimeout(0.1)
            while not self.stop.is_set():
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                self.received.append(chunk)


@contextmanager
def _listener(answers: bool) -> Iterator[_Listener]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        listener = _Listener(server, answers)
        accepting = threading.Thread(target=listener.serve, daemon=True)
        accepting.start()
        try:
            yield listener
        finally:
            listener.stop.set()
            accepting.join(30)
            for thread in listener.threads:
                thread.join(30)


def _experiment(tmp_path: Path, store: Path, small_root: DataRoot) -> Path:
    backend: dict[str, object] = {"provider": "qwen", "model": "qwen3-vl-plus",
                                  "base_url": "simulator"}  # fmt: skip
    return write_experiment(
        tmp_path / "exp.toml", store, small_root,
        {"s": backend}, [{"name": "qs", "backend": "s", "conditions": ["base"]}],
    )  # fmt: skip


@pytest.mark.parametrize("answers", [True, False], ids=["answers-as-grpc", "silent"])
def test_a_forged_note_gets_no_token_and_no_byte(
    answers: bool, experiment_store: Path, small_root: DataRoot, tmp_path: Path
) -> None:
    """A note of the right mode, saying the cluster asks for a token, aimed at a listener of
    the test's: ``monitor``, with a token at hand, sends it nothing and says why in one line.
    (Followed, Ray sent the listener its token; a silent one held it 411 s.)"""
    path = _experiment(tmp_path, experiment_store, small_root)
    token = secrets.token_hex(32)
    with _listener(answers) as listener:
        # A process of the user's own, alive, that is not the listener's: a forger's pick.
        bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        try:
            forged = here(listener.address, "groundbench", token_auth=True)
            write_note(experiment_store, forged.model_copy(update={"pid": bystander.pid}))
            env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
            env |= {"HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "RAY_AUTH_TOKEN": token}
            # Were the note followed: one try of Ray's, not ten; and Ray's client would dial
            # the loopback listener itself, not this machine's network address in its place
            # (Ray's setting for a machine that is no cluster's node).
            env |= {WAIT_VARIABLE: "1", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
            done = subprocess.run(
                [sys.executable, "-c", "from runner.cli import main; main()", "monitor",
                 str(path)],
                env=env, capture_output=True, text=True, timeout=300, check=False,
            )  # fmt: skip
        finally:
            bystander.kill()
            bystander.wait(30)
    sent = b"".join(listener.received)
    assert sent == b"", f"{len(sent)} bytes, the token among them: {token.encode() in sent}"
    assert listener.connections <= 1  # at most the check that something listens
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-3000:]
    me = Path("/proc/self/comm").read_text().strip()  # this process's name, as Linux keeps it
    assert done.stderr == (
        f"groundbench: {experiment_store}: not following {note_path(experiment_store)} to Ray "
        f"at {listener.address}: it cannot be shown to be the run's cluster (port "
        f"{listener.address.rpartition(':')[2]} is held by {me} (pid {os.getpid()}), not by "
        f"Ray's gcs_server), so nothing was sent there; if it is the run's, give it: "
        f"--address {listener.address}\n"
    )


def test_a_note_others_may_write_is_one_line(
    experiment_store: Path,
    small_root: DataRoot,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path = _experiment(tmp_path, experiment_store, small_root)
    write_note(experiment_store, here("127.0.0.1:6379", "groundbench", token_auth=True))
    note_path(experiment_store).chmod(0o644)
    code, err = run_console(capfd, monkeypatch, "monitor", str(path))
    assert code == 2
    assert err == (
        f"groundbench: {note_path(experiment_store)}: not followed: its mode is 0644, open to "
        "others, and a run writes its note 0600, owned by whoever runs it; give the run's "
        "cluster with --address, or delete the file if no run of this experiment is going\n"
    )


def test_an_address_that_accepts_and_never_answers_ends_in_one_line_at_the_bound(
    experiment_store: Path,
    small_root: DataRoot,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound is the command's own (10 s; here 0.5): the line names it, and the server got
    the opening that found it out and nothing more. Ray's own client waited 411 s."""
    path = _experiment(tmp_path, experiment_store, small_root)
    monkeypatch.setattr(_ray, "ATTACH_WAIT_S", 0.5)
    with _listener(answers=False) as listener:
        code, err = run_console(capfd, monkeypatch, "monitor", str(path),
                                 "--address", listener.address)  # fmt: skip
    assert code == 2
    assert err == (
        f"groundbench: the server at {listener.address} accepted a connection but did not "
        "answer within 0.5 s: check the address (`ray status` on the cluster's head prints "
        "it)\n"
    )
    assert b"".join(listener.received) == PREFACE
