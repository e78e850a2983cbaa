"""The rig itself: tests run offline with no key, importing harness is silent, and the
model is chosen (offline or live) only when asked for."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import anthropic
import pytest
from conftest import NetworkBlocked, reachable

import harness
from harness.model import (
    DEFAULT_MODEL,
    AnthropicModel,
    Model,
    ScriptedModel,
    default_model,
    is_live,
    model_name,
    reply,
)
from harness.model.default import _announce

OFFLINE_LINE = "Offline mode: a scripted model answers (set ANTHROPIC_API_KEY to go live)."


@pytest.fixture(autouse=True)
def fresh_announcements() -> None:
    # default_model announces each mode once per process; start every test from scratch.
    _announce.cache_clear()


# --- the network and the key ------------------------------------------------------------


def test_connecting_to_a_public_address_is_blocked() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(NetworkBlocked):
        sock.connect(("93.184.216.34", 443))


def test_connect_ex_is_blocked_too() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(NetworkBlocked):
        sock.connect_ex(("127.0.0.1", 9))


def test_a_loopback_server_of_the_tests_own_is_reachable_only_inside_its_block() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        address = server.getsockname()
        with reachable(address), socket.create_connection(address, timeout=5):
            pass
        with pytest.raises(NetworkBlocked):
            socket.create_connection(address, timeout=5)


def test_only_loopback_addresses_can_be_made_reachable() -> None:
    with pytest.raises(ValueError, match="loopback"), reachable(("93.184.216.34", 443)):
        pass


def test_unix_sockets_still_work_for_notebook_kernels() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "s")
        with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client:
            server.bind(path)
            server.listen(1)
            client.connect(path)
            connection, _ = server.accept()
            with connection:
                client.sendall(b"ping")
                assert connection.recv(4) == b"ping"


def test_an_sdk_call_made_by_mistake_fails_fast_instead_of_going_live() -> None:
    client = anthropic.Anthropic(api_key="sk-test", base_url="http://127.0.0.1:9", max_retries=0)
    with pytest.raises(anthropic.APIConnectionError) as raised:
        client.messages.create(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert isinstance(raised.value.__cause__, NetworkBlocked)


def test_no_api_key_is_set_during_tests() -> None:
    assert "ANTHROPIC_API_KEY" not in os.environ


def test_importing_harness_in_a_fresh_process_is_silent_and_needs_no_key_or_network() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise SystemExit('import touched the network')\n"
        "socket.socket.connect = refuse\n"
        "import harness\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# --- choosing the model -----------------------------------------------------------------


def test_default_model_without_a_key_is_scripted() -> None:
    assert isinstance(default_model([reply("hi")], env={}), ScriptedModel)


def test_default_model_without_a_key_follows_the_script() -> None:
    model = default_model([reply("scripted answer")], env={})
    answer = model.create(
        model=DEFAULT_MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.content[0].type == "text" and answer.content[0].text == "scripted answer"


def test_default_model_announces_offline_mode_once(capsys: pytest.CaptureFixture[str]) -> None:
    default_model(env={})
    default_model(env={})
    assert capsys.readouterr().out == OFFLINE_LINE + "\n"


def test_default_model_with_a_key_is_live() -> None:
    model = default_model(env={"ANTHROPIC_API_KEY": "sk-test"})
    assert isinstance(model, AnthropicModel)


def test_default_model_with_a_key_uses_that_key() -> None:
    model = default_model(env={"ANTHROPIC_API_KEY": "sk-test"})
    assert isinstance(model, AnthropicModel)
    assert model.client.api_key == "sk-test"


def test_live_model_does_its_own_retries_so_the_sdk_makes_none() -> None:
    model = default_model(env={"ANTHROPIC_API_KEY": "sk-test"})
    assert isinstance(model, AnthropicModel)
    assert model.client.max_retries == 0


def test_default_model_honours_the_base_url_in_its_env(capsys: pytest.CaptureFixture[str]) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://localhost:8080"}
    model = default_model(env=env)
    assert isinstance(model, AnthropicModel)
    assert str(model.client.base_url).startswith("http://localhost:8080")
    assert "at http://localhost:8080" in capsys.readouterr().out


def test_default_model_announces_live_mode_with_the_model_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    default_model(env={"ANTHROPIC_API_KEY": "sk-test", "HARNESS_MODEL": "claude-opus-4-7"})
    out = capsys.readouterr().out
    assert out.startswith("Live mode:")
    assert "claude-opus-4-7" in out


def test_a_blank_key_is_not_live() -> None:
    assert not is_live({"ANTHROPIC_API_KEY": "   "})
    assert isinstance(default_model(env={"ANTHROPIC_API_KEY": "  "}), ScriptedModel)


def test_live_model_repr_does_not_show_the_key(capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-SECRET-do-not-print"
    model = default_model(env={"ANTHROPIC_API_KEY": key})
    assert "SECRET" not in repr(model)
    assert "SECRET" not in capsys.readouterr().out


def test_both_models_satisfy_the_model_protocol() -> None:
    assert isinstance(default_model(env={}), Model)
    assert isinstance(default_model(env={"ANTHROPIC_API_KEY": "sk-test"}), Model)


def test_model_name_defaults_to_the_default_model() -> None:
    assert model_name({}) == DEFAULT_MODEL


def test_the_default_model_is_not_deprecated_by_the_installed_sdk() -> None:
    from anthropic.resources.messages.messages import DEPRECATED_MODELS

    assert DEFAULT_MODEL not in DEPRECATED_MODELS


def test_model_name_honours_harness_model() -> None:
    assert model_name({"HARNESS_MODEL": "claude-haiku-4-5"}) == "claude-haiku-4-5"


def test_a_blank_harness_model_falls_back_to_the_default() -> None:
    assert model_name({"HARNESS_MODEL": " "}) == DEFAULT_MODEL


def test_the_package_exports_what_chapter_00_uses() -> None:
    for name in ("default_model", "ScriptedModel", "AnthropicModel", "reply", "tool_call"):
        assert hasattr(harness, name), name
