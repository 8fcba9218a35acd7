"""Registers the tutoring family: a tutor env (soft and hard leak penalty) and a practice-scheduling env.

``Tutoring-v1`` and ``Tutoring-HardLeak-v1`` judge ``won`` by the student's hidden state (see
:mod:`~agentgym_envs.tutoring.tutor_env`); their ``-v0``, whose ``won`` post-test noise alone could give, stay
registered while results on them are in use (the stores under ``results/``).

Every tutoring id takes the :class:`~agentgym_envs.tutoring.config.TutoringConfig` kwargs through
``gymnasium.make`` (``num_components=``, ``items_per_component=``, ``max_turns=``, ``leak_mode=``,
``leak_penalty=``) plus ``dynamics=`` and ``verbaliser=``; the scheduling id takes ``horizon=`` and
``mastery_threshold=``. The envs count turns themselves; the registered step limits are safety nets for
invalid actions, which do not use up turns.
"""

from ..registration import register_env

_TUTOR = "agentgym_envs.tutoring.tutor_env:TutoringEnv"
_TUTOR_V0 = "agentgym_envs.tutoring.tutor_env:TutoringEnvV0"
_SCHEDULER = "agentgym_envs.tutoring.scheduling_env:PracticeSchedulingEnv"

register_env(
    "agentgym/Tutoring-v1", _TUTOR, family="tutoring", max_episode_steps=40,
    description="Tutor a simulated student (BKT state + documented math misconceptions) through tool calls or "
                "free text; reward = post-test gain minus 0.25 per revealed answer; won = every misconception "
                "fixed, a positive gain and no leak.",
)
register_env(
    "agentgym/Tutoring-HardLeak-v1", _TUTOR, family="tutoring", max_episode_steps=40, kwargs={"leak_mode": "hard"},
    description="Tutoring with the hard leak rule: any revealed answer makes the return -1.",
)
register_env(
    "agentgym/PracticeScheduling-v0", _SCHEDULER, family="tutoring", max_episode_steps=80,
    description="Schedule practice, worked examples and rests for a simulated learner over 40 activities; "
                "reward = final mastery across six math components.",
)
register_env(
    "agentgym/Tutoring-v0", _TUTOR_V0, family="tutoring", max_episode_steps=40,
    description="Superseded by Tutoring-v1 (its won was a positive post-test gain, which ending at once gets "
                "by noise in 23.5% of sessions): reward = post-test gain minus 0.25 per revealed answer.",
)
register_env(
    "agentgym/Tutoring-HardLeak-v0", _TUTOR_V0, family="tutoring", max_episode_steps=40,
    kwargs={"leak_mode": "hard"},
    description="Superseded by Tutoring-HardLeak-v1 (won as in Tutoring-v0): the hard leak rule, any revealed "
                "answer makes the return -1.",
)
