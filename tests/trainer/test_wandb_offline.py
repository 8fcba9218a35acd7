"""``wandb.enabled=true``: a real training run mirrors every ``metrics.jsonl`` number into an offline W&B run,
and nothing leaves loopback, even with ``WANDB_MODE=online`` and an API key in the environment (strace)."""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from trainer.config import load_config
from trainer.errors import ConfigError
from trainer.run.wandb_log import WandbLogger, WandbUnavailableError, numeric_items, offline_runs

RUN = ["env.env_id=agentgym/Maze-Easy-v0", "env.train_kwargs={size: 3}", "env.eval_kwargs={size: 3}", "env.max_turns=3",
       "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=4", "eval.num_tasks=2", "eval.every=2",
       "algorithm.filter_zero_variance=false", "policy.threads=1", "steps=2", "bc.episodes=0", "checkpoint_every=0",
       "wandb.enabled=true", "wandb.project=agentgym-tests", "wandb.group=h5"]

_TRACED = """
    import socket, sys
    from agentgym_envs.cli.main import main
    code = main(["train", "-", *sys.argv[1:]])
    # the control: one non-loopback connect (UDP, so nothing is sent), which the trace must show
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).connect(("203.0.113.7", 9))
    print("done", code)
"""
_INET = re.compile(r'(connect|bind|sendto|sendmsg)\(\d+, \{sa_family=AF_INET6?, sin6?_port=htons\(\d+\), .*?'
                   r'(?:inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)")')
_LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def wandb_records(path):
    """The protobuf records of a ``.wandb`` transaction log (LevelDB log framing: 32 KiB blocks, 7-byte headers)."""
    from wandb.proto.wandb_internal_pb2 import Record

    data, pos, pending, block = path.read_bytes(), 7, b"", 32768
    assert data[:4] == b":W&B", data[:8]
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = Record()
            record.ParseFromString(pending)
            yield record
            pending = b""


def history(run_dir) -> dict[int, dict[str, float]]:
    (log,) = run_dir.glob("run-*.wandb")
    rows = {}
    for record in wandb_records(log):
        if record.WhichOneof("record_type") == "history":
            items = {item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            rows[record.history.step.num] = {k: v for k, v in items.items() if not k.startswith("_")}
    return rows


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory, tiny_overrides):
    assert shutil.which("strace"), "strace is installed by scripts/install.sh (apt)"
    tmp = tmp_path_factory.mktemp("wandb")
    script, trace, out = tmp / "traced.py", tmp / "trace.txt", tmp / "run"
    script.write_text(textwrap.dedent(_TRACED))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(WANDB_MODE="online", WANDB_API_KEY="x" * 40, HOME=str(tmp))  # what a user with an account has set
    result = subprocess.run(["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect,bind,sendto,sendmsg", "-o",
                             str(trace), sys.executable, str(script), *tiny_overrides, *RUN, f"out_dir={out}"],
                            capture_output=True, text=True, timeout=240, env=env, cwd=tmp)
    assert result.returncode == 0 and "done 0" in result.stdout, (result.stdout + result.stderr)[-3000:]
    return out, trace.read_text()


def test_the_offline_run_holds_every_number_of_metrics_jsonl_at_its_step(traced_run):
    out, _ = traced_run
    (run_dir,) = offline_runs(out)
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == [1, 2] and "eval_success" in logged[1] and "entropy" in logged[0]
    rows = history(run_dir)
    assert sorted(rows) == [1, 2]
    for record in logged:
        expected = numeric_items(record)
        assert rows[record["step"]].keys() == expected.keys(), record["step"]
        assert all(math.isclose(rows[record["step"]][k], v, rel_tol=1e-9, abs_tol=1e-12) for k, v in expected.items())
    (run,) = [r.run for r in wandb_records(next(run_dir.glob("run-*.wandb"))) if r.WhichOneof("record_type") == "run"]
    assert (run.project, run.run_group, run.display_name) == ("agentgym-tests", "h5", "run")  # wandb.* keys; name: out_dir's
    config = {item.key or ".".join(item.nested_key): json.loads(item.value_json) for item in run.config.update}
    assert config["rollout"]["group_size"] == 2 and config["wandb"]["enabled"] is True  # the whole config


def test_nothing_leaves_loopback_even_when_the_environment_asks_for_online(traced_run):
    _, text = traced_run
    calls = [(m[1], m[2] or m[3]) for m in _INET.finditer(text)]
    outside = {address for _, address in calls if address not in _LOOPBACK}
    assert outside == {"203.0.113.7"}, outside  # only the control: W&B (and the trainer) stayed on this machine
    assert "AF_UNIX" in text  # W&B's service was traced: it talks over a unix socket
    assert "169.254.169.254" not in text and "8.8.8.8" not in text


def test_without_wandb_installed_enabling_it_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb now raises ImportError
    config = load_config(None, ["wandb.enabled=true"])
    with pytest.raises(WandbUnavailableError, match=r"pip install 'agentgym\[wandb\]' \(or set wandb.enabled=false\)"):
        WandbLogger(config.wandb, tmp_path, {})
    assert not (tmp_path / "wandb").exists()


def test_bad_wandb_settings_are_refused_with_the_key():
    with pytest.raises(ConfigError, match="wandb.project must be a non-empty name, got ''"):
        load_config(None, ["wandb.project=''"])
    with pytest.raises(ConfigError, match="Did you mean 'wandb.enabled'"):
        load_config(None, ["wandb.enable=true"])
