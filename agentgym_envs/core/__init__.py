"""The environment SDK: text spaces, the env base classes and the contract's errors."""

from .errors import AgentGymError, InfraError, InvalidAction, ResetNeeded, SnapshotError, UnknownEnvError
from .spaces import UnicodeText
from .task_env import LazyTasks, Task, TaskEnv, Verdict
from .text_env import Step, TextEnv
from .tool_env import ToolEnv, parse_call, tool, tool_schema

__all__ = [
    "AgentGymError", "InfraError", "InvalidAction", "ResetNeeded", "SnapshotError", "UnknownEnvError",
    "UnicodeText", "Step", "TextEnv", "Task", "TaskEnv", "LazyTasks", "Verdict", "ToolEnv", "tool", "tool_schema", "parse_call",
]
