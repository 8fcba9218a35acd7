"""Learning regression, held out, with its control: on small seeded 3×3 mazes (train tasks are even reset
seeds, held-out tasks odd ones) a behaviour-cloning warm-up on a dithering demonstrator (half its moves are
``look``) leaves the tiny policy partly competent; 8 RL updates raise its held-out success clearly, and
behaviour cloning alone from the same warm-up for RL's wall time (the quickstart's control) stays measurably
lower. The quickstart's recipe, shrunk (docs/trainer.md, "Quickstart"). Measured on both cores (threads 0):
warm-up 0.234, RL 0.477, control 0.305 (128 episodes each, ±~0.08; 116 s alone). On one thread, as now, with
three other busy processes on the 2 cores: warm-up 0.250, RL 0.484, control 0.297 (220 s). Fixed seeds."""

import copy
import time

import pytest

from trainer.config import load_config
from trainer import Trainer, fit

MARGIN, CONTROL_MARGIN = 0.08, 0.08
MAZE = ["env.env_id=agentgym/Maze-Easy-v0", "env.system_prompt=''", "env.train_kwargs={size: 3}",
        "env.eval_kwargs={size: 3}", "env.max_turns=10", "bc.episodes=128", "bc.epochs=20", "bc.batch_size=8",
        "bc.expert_noise=0.5", "bc.expert_habit=look", "rollout.tasks_per_step=8", "rollout.group_size=8",
        "rollout.max_new_tokens=6", "rollout.invalid_penalty=0", "rollout.stall_penalty=0.1",
        "algorithm.estimator=gigpo_mean", "optim.lr=0.0005", "optim.minibatches=2", "optim.epochs=2",
        "optim.micro_batch_tokens=2048", "steps=8", "eval.num_tasks=64", "eval.temperature=1.0", "eval.repeats=8",
        "progress=false", "checkpoint_every=0", "policy.threads=1"]  # any core count, the same figures; graceful on a shared CPU


@pytest.mark.slow
def test_rl_beats_its_warm_up_and_more_cloning_on_held_out_mazes(tmp_path, tiny_cache):
    # The control gets RL's CPU time, not its wall time: on one thread CPU time hardly moves when other work
    # shares the cores, while wall time did. Each figure is 512 episodes (64 tasks × 8 at T = 1, σ ≈ 0.02):
    # with 128, the control's figure moved with its step count by a fresh draw each time (0.328, 0.305 and
    # 0.391 in three runs against RL's 0.469 every time; 0.391 failed the margin in CI). At 512: warm-up
    # 0.312, RL 0.469, control 0.316.
    trainer = Trainer(load_config(None, MAZE + [f"policy.cache_dir={tiny_cache}", f"out_dir={tmp_path}"]))
    try:
        trainer.warm_up()
        warm = copy.deepcopy(trainer.model.state_dict())
        cloned = trainer.evaluate()["eval_success"]
        start = time.process_time()
        records = fit(trainer, echo=None)
        rl_cpu = time.process_time() - start
        trained = trainer.evaluate()["eval_success"]
        trainer.model.load_state_dict(warm)  # the same warm-up, then only more cloning, for RL's CPU time
        clock: list[float] = []  # from the first batch on (re-collecting the expert episodes is not cloning)
        trainer.warm_up(epochs=10**6, on_batch=lambda loss: clock.append(time.process_time()) or clock[-1] - clock[0] >= rl_cpu)
        bc_cpu = clock[-1] - clock[0]
        control = trainer.evaluate()["eval_success"]
    finally:
        trainer.close()
    print(f"held out: warm-up {cloned:.3f}, RL {trained:.3f} ({rl_cpu:.0f} CPU-s), BC control {control:.3f} ({bc_cpu:.0f} CPU-s)")
    assert 0.05 <= cloned <= 0.5, f"the warm-up should leave room to improve: held-out BC success {cloned}"
    assert trained >= cloned + MARGIN, f"RL did not raise held-out success clearly: {cloned} -> {trained}"
    assert trained >= control + CONTROL_MARGIN, f"more cloning did as well as RL: RL {trained}, BC control {control}"
    assert bc_cpu >= rl_cpu, f"the control had less CPU time ({bc_cpu:.0f} s) than RL ({rl_cpu:.0f} s)"  # by construction
    assert len(records) == 8 and all(r["logprob_gap_max"] < 1e-3 for r in records if "logprob_gap_max" in r)


def test_exploring_expert_detours_are_context_not_labels(tiny_policy):
    """bc.explore: the expert sometimes first visits a wrong receptacle; those replies stay in the context
    with loss_mask 0, every other reply is a label, and the data repeat exactly for a seed."""
    from trainer.learn.bc import expert_trajectories
    from trainer.collect.episodes import PlaySpec

    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train"}, max_turns=8, system_prompt="")
    plain = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0)
    explored = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0, explore=1.0, max_detours=1)
    again = expert_trajectories(tiny_policy, spec, list(range(8)), seed=0, explore=1.0, max_detours=1)
    assert [t.token_ids for t in explored] == [t.token_ids for t in again]
    assert len(plain) == len(explored) == 8  # the expert recovers from one detour within the turn limit
    for p, e in zip(plain, explored):
        assert e.num_turns == p.num_turns + 1  # one detour each
        labelled = {k for k in e.token_turns if k >= 0}
        assert labelled == set(range(1, e.num_turns))  # the detour (turn 0) is not a label
        assert sum(e.loss_mask) == sum(1 for k in e.token_turns if k >= 0)


def test_exploring_expert_needs_the_env_hook_not_env_text():
    """Detours come from the env's expert_detours(): an env without the hook (the maze) gets exactly the
    scripted expert's episodes and no detour turns, even at explore=1."""
    from agentgym_envs.policies import ExpertPolicy
    from trainer.learn.bc import ExploringExpertPolicy
    from trainer.collect.episodes import PlaySpec, run_text_episodes

    spec = PlaySpec("agentgym/Maze-Easy-v0", max_turns=30)
    explorer = ExploringExpertPolicy(explore=1.0, max_detours=5)
    explored = run_text_episodes(explorer, spec, [0, 1, 2], seed=0)
    plain = run_text_episodes(ExpertPolicy(), spec, [0, 1, 2], seed=0)
    assert [e.history.turns for e in explored] == [e.history.turns for e in plain]
    assert all(e.won for e in explored) and explorer.detour_turns() == [frozenset()] * 3


def test_invalid_penalty_shapes_training_rewards_only(tiny_policy):
    """rollout.invalid_penalty: the same sampled episodes, minus the penalty on each turn the env called invalid."""
    from trainer.collect.episodes import PlaySpec
    from agentgym_envs.policies import SamplingConfig
    from trainer.collect.rollout import RolloutWorker

    spec = PlaySpec("agentgym/Household-PickPlace-v0", {"split": "train", "dense_reward": True}, max_turns=3, system_prompt="")
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=8, seed=3)
    runs = []
    for penalty in (0.0, 0.5):
        worker = RolloutWorker(spec, tasks_per_batch=2, group_size=2, max_context_tokens=1024, invalid_penalty=penalty)
        try:
            runs.append(worker.collect(tiny_policy, [0, 1], sampling=sampling, seed=0)[0])
        finally:
            worker.close()
    plain, shaped = runs
    assert [t.token_ids for t in plain] == [t.token_ids for t in shaped]
    diffs = [s - p for a, b in zip(plain, shaped) for p, s in zip(a.rewards, b.rewards)]
    assert all(abs(d) < 1e-9 or abs(d + 0.5) < 1e-9 for d in diffs) and any(abs(d + 0.5) < 1e-9 for d in diffs)
    assert [t.won for t in plain] == [t.won for t in shaped]


def _scripted_runs(tiny_policy, spec, commands, settings):
    """One batch (2 tasks × G 4) per ``settings`` (RolloutWorker penalty kwargs), played by a scripted player
    cycling through ``commands`` the same way every time, so the runs differ only in their rewards."""
    from agentgym_envs.policies import Completion, SamplingConfig
    from trainer.collect.rollout import RolloutWorker

    sampling = SamplingConfig(temperature=1.0, max_new_tokens=6, seed=3)
    calls = []

    def scripted(prompts, *, sampling, seeds=None):
        calls.append(1)
        texts = [commands[(len(calls) + row) % len(commands)] for row in range(len(prompts))]
        return [Completion(t, ids := tiny_policy.encode(t) + [tiny_policy.tokenizer.eos_token_id], [0.0] * len(ids), "stop")
                for t in texts]

    tiny_policy.generate = scripted
    runs = []
    for kwargs in settings:
        calls.clear()
        worker = RolloutWorker(spec, tasks_per_batch=2, group_size=4, max_context_tokens=2048, **kwargs)
        try:
            runs.append(worker.collect(tiny_policy, [0, 1], sampling=sampling, seed=0)[0])
        finally:
            worker.close()
    assert len({tuple(tuple(t.token_ids) for t in run) for run in runs}) == 1  # the same play in every run
    return runs


def test_stall_penalty_costs_the_turns_that_left_the_state_unchanged(tiny_policy):
    """rollout.stall_penalty: on mazes, a wall bump or ``look`` (the room's state_key unchanged, the episode
    going on) costs the penalty, a move costs nothing; with an invalid penalty too, the larger applies once."""
    from trainer.collect.episodes import PlaySpec

    spec = PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=6, system_prompt="")
    commands = ["go north", "go east", "look", "go south", "go west"]  # a scripted player: moves, bumps, looks
    settings = [dict(invalid_penalty=i, stall_penalty=st) for i, st in ((0.0, 0.0), (0.0, 0.5), (0.2, 0.5))]
    plain, stalled, both = _scripted_runs(tiny_policy, spec, commands, settings)
    costs = {0: 0, 1: 0}
    for p, s, b in zip(plain, stalled, both):
        for k, (r0, r1, r2) in enumerate(zip(p.rewards[:-1], s.rewards, b.rewards)):  # the next turn's room known
            same_room = p.state_keys[k + 1] == p.state_keys[k]  # (an invalid action never leaves the room)
            assert abs(r1 - (r0 - 0.5 * same_room)) < 1e-9 and abs(r2 - r1) < 1e-9
            costs[int(same_room)] += 1
    assert costs[0] and costs[1]  # both kinds of turn occurred


def test_revisit_penalty_costs_the_turns_that_return_to_a_visited_state(tiny_policy):
    """rollout.revisit_penalty: on mazes, a turn that leads (the episode going on) into a room the episode was
    already in, the start and the current room included, costs the penalty; a move into a new room costs
    nothing; with a larger stall penalty too, a stall costs that one, a loop back the revisit penalty."""
    from trainer.collect.episodes import PlaySpec

    spec = PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=8, system_prompt="")
    commands = ["go north", "go south", "go east", "go west", "look", "go west", "go east"]  # there and back
    settings = [dict(stall_penalty=st, revisit_penalty=r) for st, r in ((0.0, 0.0), (0.0, 0.3), (0.5, 0.3))]
    plain, looped, both = _scripted_runs(tiny_policy, spec, commands, settings)
    kinds = {"new": 0, "stall": 0, "loop": 0}
    for p, r, b in zip(plain, looped, both):
        for k, (r0, r1, r2) in enumerate(zip(p.rewards[:-1], r.rewards, b.rewards)):  # the next turn's room known
            stall = p.state_keys[k + 1] == p.state_keys[k]
            loop = not stall and p.state_keys[k + 1] in p.state_keys[:k]
            assert abs(r1 - (r0 - 0.3 * (stall or loop))) < 1e-9
            assert abs(r2 - (r0 - 0.5 * stall - 0.3 * loop)) < 1e-9
            kinds["stall" if stall else "loop" if loop else "new"] += 1
    assert all(kinds.values()), kinds  # every kind of turn occurred


def test_negative_penalties_are_refused():
    from trainer.config import load_config
    from trainer.errors import ConfigError

    for name in ("invalid_penalty", "stall_penalty", "revisit_penalty"):
        with pytest.raises(ConfigError, match=f"rollout.{name} must be >= 0"):
            load_config(None, [f"rollout.{name}=-0.1"])


def test_behaviour_cloning_stops_at_its_time_budget(tiny_policy):
    """bc seconds (the BC-only control's budget): a budget of 0 stops after the first batch, mid-epoch;
    no budget runs every batch of every epoch; ``on_batch`` returning true stops after that batch."""
    from trainer.learn.bc import behaviour_clone, expert_trajectories
    from trainer.collect.episodes import PlaySpec

    spec = PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=10, system_prompt="")
    data = expert_trajectories(tiny_policy, spec, list(range(4)), seed=0)
    seen: list[float] = []
    behaviour_clone(tiny_policy, data, epochs=3, batch_size=1, lr=1e-3, seed=0, on_batch=seen.append, seconds=0.0)
    assert len(seen) == 1
    seen.clear()
    behaviour_clone(tiny_policy, data, epochs=3, batch_size=1, lr=1e-3, seed=0, on_batch=seen.append)
    assert len(seen) == 3 * len(data) == 12
    seen.clear()
    result = behaviour_clone(tiny_policy, data, epochs=3, batch_size=1, lr=1e-3, seed=0,
                             on_batch=lambda loss: seen.append(loss) or len(seen) == 5)
    assert len(seen) == 5 and result.last_loss == seen[-1]


def test_length_grouped_bc_batches_cover_each_row_once_with_less_padding():
    """bc.group_by_length: each epoch still holds every index exactly once, batches come from megabatches
    sorted by length (so a batch's rows are neighbours in that order), the padding falls, the order repeats
    for a seed, and 0 is the plain shuffle."""
    import torch

    from trainer.learn.bc import epoch_batches

    lengths = [10, 200, 12, 190, 11, 210, 13, 205, 9, 195, 14, 199]
    plain = epoch_batches(lengths, 2, torch.Generator().manual_seed(0))
    assert plain == [list(b) for b in torch.randperm(12, generator=torch.Generator().manual_seed(0)).split(2)]
    grouped = epoch_batches(lengths, 2, torch.Generator().manual_seed(0), group_by_length=3)
    assert sorted(i for b in grouped for i in b) == list(range(12)) and all(len(b) == 2 for b in grouped)
    assert grouped == epoch_batches(lengths, 2, torch.Generator().manual_seed(0), group_by_length=3)
    order = torch.randperm(12, generator=torch.Generator().manual_seed(0)).tolist()  # the same first draw
    for start in (0, 6):  # megabatches of 3 × 2 rows: each one's batches are its rows sorted, longest first
        chunk = sorted(order[start:start + 6], key=lambda i: -lengths[i])
        assert all(chunk[k:k + 2] in grouped for k in (0, 2, 4))
    padded = lambda batches: sum(len(b) * max(lengths[i] for i in b) for b in batches)  # noqa: E731
    assert padded(grouped) < padded(plain)
    whole = epoch_batches(lengths, 2, torch.Generator().manual_seed(0), group_by_length=6)  # one megabatch
    assert sorted(padded([b]) for b in whole) == [20, 24, 28, 390, 400, 420]  # (10,9) (12,11) … (200,199) (210,205)


def test_noisy_expert_labels_its_noise_and_repeats_exactly(tiny_policy):
    """bc.expert_noise: a weak demonstrator whose random moves are labelled (BC imitates them); 0 is the
    plain expert, 1 only draws valid actions, and the data repeat exactly for a seed."""
    from agentgym_envs.policies import ExpertPolicy
    from trainer.learn.bc import NoisyExpertPolicy, expert_trajectories
    from trainer.collect.episodes import PlaySpec, run_text_episodes

    spec = PlaySpec("agentgym/Maze-Easy-v0", {"size": 3}, max_turns=10, system_prompt="")
    tasks = list(range(0, 32, 2))
    plain = run_text_episodes(ExpertPolicy(), spec, tasks, seed=0)
    quiet = run_text_episodes(NoisyExpertPolicy(noise=0.0), spec, tasks, seed=0)
    assert [e.history.turns for e in quiet] == [e.history.turns for e in plain]
    noisy = run_text_episodes(NoisyExpertPolicy(noise=0.5), spec, tasks, seed=0)
    assert [e.history.turns for e in noisy] == [e.history.turns for e in run_text_episodes(NoisyExpertPolicy(noise=0.5), spec, tasks, seed=0)]
    assert sum(len(e.history.turns) for e in noisy) > sum(len(e.history.turns) for e in plain)  # it wanders
    assert sum(e.won for e in noisy) < sum(e.won for e in plain) == len(tasks)  # and sometimes loses
    for episode in run_text_episodes(NoisyExpertPolicy(noise=1.0), spec, tasks[:4], seed=0):
        assert all(reply.startswith(("go ", "look")) for reply, _ in episode.history.turns)  # valid actions only
    dithering = run_text_episodes(NoisyExpertPolicy(noise=0.5, habit="look"), spec, tasks, seed=0)
    replies = [reply for e in dithering for reply, _ in e.history.turns]
    assert 0 < replies.count("look") < len(replies) and all(r == "look" or r.startswith("go ") for r in replies)
    data = expert_trajectories(tiny_policy, spec, tasks, seed=0, noise=0.5)
    assert len(data) == sum(e.won for e in noisy)  # won episodes only, every reply a label (noise included)
    assert all({k for k in t.token_turns if k >= 0} == set(range(t.num_turns)) for t in data)
