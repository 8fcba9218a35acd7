"""Processes: finding, signalling, killing and starting background jobs.

Tests match process names with a bracket (``'runaway[.]sh'``) so that the test's own command line, which
contains the pattern, does not match itself.
"""

from ..task import make_task

LOOP = "#!/bin/bash\nwhile true; do sleep 0.2; done\n"
DAEMON = """import signal, time

def reload(signum, frame):
    open("status.txt", "w").write("reloaded\\n")

signal.signal(signal.SIGHUP, reload)
open("status.txt", "w").write("running\\n")
while True:
    time.sleep(0.1)
"""
TICKER = "#!/bin/bash\nwhile true; do echo tick >> ticks.log; sleep 0.5; done\n"
START = "nohup bash {} >/dev/null 2>&1 &"
GOOD_JOBS_EQ_2 = (
    "[ \"$(ps -eo pid=,ppid=,args= | awk '/--mode=goo[d]/ {parent[$1] = $2} "
    "END {n = 0; for (p in parent) if (!(parent[p] in parent)) n++; print n}')\" = 2 ]"
)


def eventually(condition: str) -> str:
    """A test that passes once ``condition`` holds within 2 s (signals and background jobs act asynchronously)."""
    return f"for i in $(seq 20); do {condition} && exit 0; sleep 0.1; done; exit 1"


def gone(pattern: str) -> str:
    return eventually(f"! pgrep -f -- '{pattern}' >/dev/null")


TASKS = [
    make_task(
        "processes/kill-runaway", "processes", "easy",
        "A script runaway.sh is running in the background. Stop it, and only it (keeper.sh must keep running).",
        files={"runaway.sh": LOOP, "keeper.sh": LOOP},
        setup=START.format("runaway.sh") + "\n" + START.format("keeper.sh"),
        solution=["pkill -f runaway.sh"],
        tests={"runaway.sh stopped": gone("runaway[.]sh"),
               "keeper.sh still running": "pgrep -f 'keeper[.]sh' >/dev/null"},
    ),
    make_task(
        "processes/pid-file", "processes", "easy",
        "A program server.py is running. Write its process ID into server.pid.",
        files={"server.py": "import time\nwhile True:\n    time.sleep(1)\n"},
        setup="nohup python3 server.py >/dev/null 2>&1 &",
        solution=["pgrep -f server.py > server.pid"],
        tests={"server.pid holds its PID": '[ "$(tr -d " \\n" < server.pid)" = "$(pgrep -f "server[.]py")" ]'},
    ),
    make_task(
        "processes/reload-daemon", "processes", "medium",
        "daemon.py reloads its configuration when it receives SIGHUP (it then writes 'reloaded' to status.txt). "
        "Make it reload without restarting it.",
        files={"daemon.py": DAEMON},
        setup="nohup python3 daemon.py >/dev/null 2>&1 &\n"
              "for i in $(seq 100); do [ -s status.txt ] && break; sleep 0.05; done",
        solution=["pkill -HUP -f daemon.py"],
        tests={"it reloaded": eventually('[ "$(cat status.txt)" = reloaded ]'),
               "still running": "pgrep -f 'daemon[.]py' >/dev/null"},
    ),
    make_task(
        "processes/background-job", "processes", "medium",
        "Start ticker.sh in the background so that it keeps running after you submit (it appends a line to "
        "ticks.log twice a second).",
        files={"ticker.sh": TICKER},
        solution=["nohup ./ticker.sh >/dev/null 2>&1 &"],
        tests={"ticker.sh running": "pgrep -f 'ticker[.]sh' >/dev/null",
               "ticks.log growing": eventually("test -s ticks.log")},
    ),
    make_task(
        "processes/kill-bad-job", "processes", "hard",
        "Three copies of job.sh are running; exactly one of them was started with the argument --mode=bad. Kill "
        "that one and leave the two others running.",
        files={"job.sh": LOOP},
        setup="\n".join(START.format(f"job.sh --mode={m}") for m in ("good", "bad", "good")),
        solution=["pkill -f -- '--mode=bad'"],
        tests={
            "the bad job is gone": gone("--mode=ba[d]"),
            # Count jobs, not their momentary forks: a job forking `sleep` has a child with its own command
            # line until the exec, so only processes whose parent is not itself a good job are counted.
            "two good jobs remain": GOOD_JOBS_EQ_2,
        },
    ),
    make_task(
        "processes/exit-status", "processes", "easy",
        "Run ./check.sh and write its exit status (a number) into status.txt.",
        files={"check.sh": "#!/bin/bash\necho checking\nexit 3\n"},
        solution=["./check.sh; echo $? > status.txt"],
        tests={"status.txt holds 3": '[ "$(tr -d " \\n" < status.txt)" = 3 ]'},
    ),
]
