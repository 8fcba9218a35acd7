"""Action protocols: one layer that turns what models emit into each env's native action.

Plain text, ReAct ``Action:`` lines, ``<action>…</action>`` tags and JSON/OpenAI/Hermes tool calls are
parsed here and nowhere else; envs only ever see their own grammar. Use a protocol through
:class:`ActionProtocolWrapper` (or ``agentgym_envs.make(id, protocol="react")``).

>>> import agentgym_envs
>>> env = agentgym_envs.make("agentgym/Maze-Easy-v0", protocol="tags")
>>> obs, info = env.reset(seed=0)
>>> env.step("<action>" + env.unwrapped.expert_action() + "</action>")[4]["action_valid"]
True
"""

from .base import ActionProtocol, ParsedAction, get_protocol, protocol_names, register_protocol, split_think, unwrap
from .plain import PlainText
from .react import ReAct
from .tags import Tags
from .tool_calls import ACT_TOOL, ToolCalls, act_tool_schema
from .wrapper import ActionProtocolWrapper

__all__ = [
    "ActionProtocol", "ParsedAction", "get_protocol", "protocol_names", "register_protocol",
    "PlainText", "ReAct", "Tags", "ToolCalls", "ACT_TOOL", "act_tool_schema", "ActionProtocolWrapper",
    "split_think", "unwrap",
]
