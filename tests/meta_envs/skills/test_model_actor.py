"""A model actor in the skills meta-envs (issue 31 §3): ``actor="hf:tiny"`` is resolved, documents are counted
with the actor's own tokenizer, and a document too long for the actor's context is the reflector's outcome
(−1, a clear observation), never ``infra_error`` or an exception out of ``step``.

The actor is the real tiny policy (``hf:tiny``); the HTTP path talks to ``trainer.serve.policy_server``'s real policy server
on loopback, which answers a prompt over the model's context with HTTP 400 as OpenAI and vLLM do."""

from __future__ import annotations

import pytest

import agentgym_envs  # noqa: F401  (registers the ids)
from meta_envs.skills.model_actor import ActorContextError, PolicyActor, actor_from_spec
from meta_envs.skills.library_env import SkillLibraryEnv
from meta_envs.skills.reflect_env import ReflectEnv
from meta_envs.skills.skill import Skill, count_tokens

pytestmark = pytest.mark.slow

SHORT = "Answer the question with the title you find."
#: 50,000 CJK characters: 5,000 tokens by the tokenizer-free rule (inside the default budget), ~150k model tokens.
CJK = "熱" * 50_000
#: English prose inside the 5,000-token budget by both counts, but over the tiny model's 2,048-token context.
LONG = "Search for the page, read it, then answer with the title you found there. " * 100


@pytest.fixture(scope="module")
def reflect():
    import torch

    torch.set_num_threads(1)
    env = ReflectEnv(family="search", actor="hf:tiny", n_probes=2, n_shown=1, max_rounds=6)
    env.reset(seed=0)
    yield env
    env.close()


def test_a_spec_string_is_resolved_and_every_step_measures(reflect):
    assert isinstance(reflect.actor, PolicyActor) and reflect.actor.count_tokens("Heat the apple.") > 0
    _, reward, _, truncated, info = reflect.step(SHORT)
    assert info["infra_error"] is None and not truncated and info["action_valid"]
    assert info["utility"]["n"] == 2 and reward == info["utility"]["U"]


def test_a_document_inside_the_rule_budget_but_not_the_actors_is_the_reflectors_outcome(reflect):
    assert count_tokens(CJK) == 5_000 and reflect.actor.count_tokens(CJK) > 100_000
    observation, reward, terminated, truncated, info = reflect.step(CJK)
    assert (reward, terminated, truncated, info["infra_error"]) == (-1.0, False, False, None)
    assert info["action_valid"] is False and "actor's own tokenizer" in observation
    assert observation.startswith("Invalid document") and "unchanged" in observation


def test_a_document_over_the_actors_context_is_the_reflectors_outcome(reflect):
    assert count_tokens(LONG) <= 5_000 and reflect.actor.context_tokens < reflect.actor.count_tokens(LONG) <= 5_000
    observation, reward, terminated, truncated, info = reflect.step(LONG)
    # the episode's second invalid document: its −1 is cut at the return's floor (meta_envs.bounded_return)
    assert (info.get("reward_uncut", reward), truncated, info["infra_error"]) == (-1.0, False, None)
    assert reward <= 0.0 and info["action_valid"] is False
    assert "does not fit the actor's context" in observation and "2048 tokens" in observation
    _, reward, _, _, info = reflect.step(SHORT)  # the document was left as it was: rewriting it earns exactly 0
    assert reward == 0.0 and info["infra_error"] is None


def test_an_env_side_spec_is_refused_at_construction():
    with pytest.raises(ValueError, match="env-side"):
        ReflectEnv(actor="random")


@pytest.fixture(scope="module")
def server(reflect):
    from trainer.serve.policy_server import PolicyServer

    served = PolicyServer(reflect.actor.policy, model_name="tiny")
    served.start()
    yield served
    served.shutdown()
    served.server_close()


def test_an_endpoints_context_refusal_is_the_reflectors_outcome_in_skill_library(server):
    actor = actor_from_spec(f"openai:{server.url}#tiny")
    assert actor.count_tokens(LONG) is None  # an HTTP actor has no local tokenizer: its server decides
    env = SkillLibraryEnv(family="search", actor=actor, n_probes=2, n_shown=1)
    env.reset(seed=0)
    try:
        add = "ADD\n" + Skill("long-search", "Searches at length.", LONG).to_skill_md()
        observation, reward, terminated, truncated, info = env.step(add)
        assert (reward, truncated, info["infra_error"]) == (-1.0, False, None) and info["action_valid"] is False
        assert "does not fit its context" in observation and "context" in info["parse_error"]
        assert info["library"] == [] and info["metrics"]["operations"] == 1.0
    finally:
        env.close()


def test_a_context_refusal_says_so_and_other_endpoint_failures_stay_ours(server):
    from trainer.models.backends.openai_http import EndpointError

    actor = actor_from_spec(f"openai:{server.url}#tiny")
    actor.reset(instruction="x", system_prompt=LONG * 2, seed=0)
    with pytest.raises(ActorContextError, match="context"):
        actor.act("hello", {})
    missing = actor_from_spec(f"openai:{server.url}#no-such-model")
    missing.reset(instruction="x", system_prompt="short", seed=0)
    with pytest.raises(EndpointError):
        missing.act("hello", {})
