"""A recording killed with SIGKILL at random moments keeps every completed call."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

from agent_core.trace.reader import read_trace

KILLS = 20


def test_sigkill_at_random_moments_loses_no_completed_call(tmp_path):
    rng = random.Random(20261202)
    script = "".join(f"{t}\n" for _ in range(60) for t in ("我叫小明", "帮我查一下成都天气", "算一下 (12+30)*2"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    survived = torn = calls = 0
    for kill in range(KILLS):
        path = tmp_path / f"kill{kill}.jsonl"
        out_path = tmp_path / f"kill{kill}.out"
        with open(out_path, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-u", "-m", "agent_core.cli", "chat", "--trace", str(path)],
                                    stdin=subprocess.PIPE, stdout=out, stderr=subprocess.DEVNULL, env=env,
                                    cwd=tmp_path)
            proc.stdin.write(script.encode())
            proc.stdin.flush()
            # wait until the first call is recorded, then kill at a random moment of the conversation
            deadline = time.time() + 30
            while time.time() < deadline and not (path.exists() and b'"type":"call"' in path.read_bytes()):
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 1.5))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        replies = [line for line in out_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        trace = read_trace(path)           # must load: at worst a torn last line, reported as a warning
        assert all("incomplete" in w for w in trace.warnings)
        finished = [c for c in trace.calls if c.status == 200 and c.reply is not None]
        # every reply the user saw came from a call that is in the trace, complete, in order
        final_replies = [c.reply.get("content") for c in finished if not c.reply.get("tool_calls")]
        assert final_replies[:len(replies)] == replies
        for call in finished:
            assert call.messages and call.messages[-1]["role"] in ("user", "tool"), (path.read_text()[-3000:], call)
        survived += 1
        torn += bool(trace.warnings)
        calls += len(finished)
    print(f"{survived}/{KILLS} kills survived; {torn} left a torn last line; {calls} completed calls kept")
    assert survived == KILLS
