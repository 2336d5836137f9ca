"""An API key given through the environment, the CLI or the proxy's Authorization header appears in
nothing a session produces: trace files, logs, exports, error messages."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import openai

ENV_KEY = "sk-env-SECRET-9f8e7d6c5b4a39281706"
CLI_KEY = "sk-cli-SECRET-0a1b2c3d4e5f60718293"
PROXY_KEY = "sk-proxy-SECRET-aabbccddeeff00112233"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args, cwd, env_extra=None, stdin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "agent_core.cli", *args], input=stdin, text=True,
                          capture_output=True, env=env, cwd=cwd, timeout=180)


def test_no_key_in_anything_a_session_produced(demo_server, tmp_path):
    outputs: list[str] = []
    # 1. key from the environment
    r = _run(["chat", "--trace", "env.jsonl"], tmp_path,
             {"OPENAI_API_KEY": ENV_KEY, "OPENAI_BASE_URL": demo_server.base_url},
             "我叫小明\n帮我查一下成都天气\n/history\n")
    outputs += [r.stdout, r.stderr]
    assert r.returncode == 0 and "成都" in r.stdout
    # 2. key on the command line, with an endpoint that rejects it (the error text names no key)
    demo_server_fault = _run(["chat", "--trace", "cli.jsonl", "--api-key", CLI_KEY, "--base-url",
                              f"http://127.0.0.1:{_free_port()}/v1"], tmp_path, stdin="你好\n")
    outputs += [demo_server_fault.stdout, demo_server_fault.stderr]
    assert "error:" in demo_server_fault.stdout
    # 3. every export of the recorded trace
    for kind in ("json", "curl", "pytest", "payloads", "html"):
        r = _run(["export", "env.jsonl", "--as", kind, "-o", f"export.{kind}"], tmp_path)
        outputs += [r.stdout, r.stderr]
        assert r.returncode == 0, r.stderr
    r = _run(["export", "env.jsonl", "--as", "trace", "-o", "copy.jsonl"], tmp_path)
    assert r.returncode == 0, r.stderr
    # 4. an app talking through the recording proxy with its own key
    port = _free_port()
    proxy = subprocess.Popen([sys.executable, "-m", "agent_core.cli", "proxy", "--upstream", demo_server.base_url,
                              "--port", str(port), "--trace", str(tmp_path / "proxy")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=PROXY_KEY, max_retries=5)
        deadline = time.time() + 30
        while True:
            try:
                reply = client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "我叫小明"}])
                break
            except openai.APIConnectionError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        assert "小明" in reply.choices[0].message.content
    finally:
        proxy.terminate()
        out, err = proxy.communicate(timeout=30)
        outputs += [out, err]
    # grep everything
    produced = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" and "proxy" in str(p) for p in produced)
    for key in (ENV_KEY, CLI_KEY, PROXY_KEY):
        for path in produced:
            assert key not in path.read_text(encoding="utf-8", errors="replace"), (key, path)
        for text in outputs:
            assert key not in text
