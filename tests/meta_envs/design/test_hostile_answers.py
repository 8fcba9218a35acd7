"""A generated module answering deeply nested JSON is the designer's outcome, never a host crash (issue 31 §2)."""

from __future__ import annotations

import pytest

from meta_envs.design.contract import example_module
from meta_envs.design.env_design import EnvDesignEnv
from meta_envs.design.sandboxed import GeneratedEnvFault, ModuleLimits, SandboxedModuleEnv

LAMPS = example_module("lamps")
DEEP_HINT = '''
    def hint(self):
        value = "a flickering lamp lies"
        for _ in range(986):
            value = [value]
        return value
'''


def deep_module() -> str:
    """The lamps env whose ``hint()`` answers a list nested 986 deep (the attack of issue 31)."""
    head, marker = LAMPS.split("    def hint(self):")[0], "\nclass Env"
    assert marker in head
    return head.rstrip() + "\n" + DEEP_HINT


def nested(frames: int, call):
    """``call()`` from a stack ``frames`` deeper, as when a trainer or a vector env drives the design env."""
    return call() if frames == 0 else nested(frames - 1, call)


def test_the_sandboxed_env_reports_a_deep_answer_as_the_modules_protocol_fault():
    with SandboxedModuleEnv(deep_module(), limits=ModuleLimits(call_timeout_s=5.0, import_timeout_s=10.0)) as env:
        with pytest.raises(GeneratedEnvFault, match="deep") as info:
            nested(50, lambda: env.reset(0))
    assert info.value.kind == "protocol"


def test_the_designer_of_a_deep_answer_gets_minus_half_never_infra():
    env = EnvDesignEnv(play_seeds=tuple(range(100, 108)))
    try:
        env.reset(seed=0)
        _, reward, terminated, _, info = nested(50, lambda: env.step(deep_module()))
    finally:
        env.close()
    assert terminated and reward == -0.5 and info["outcome"] == "gate", info["gates"][-1]
    assert info["infra_error"] is None and not info["accepted"]
    assert "deep" in info["gates"][-1]["detail"], info["gates"][-1]
