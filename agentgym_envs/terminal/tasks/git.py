"""git: committing, branching, history search, merging, reverting and conflict resolution.

Author and committer dates are pinned in the task environment, so commit hashes — and the observations
that show them — are the same in every rollout.
"""

from ..task import make_task

REPO = "git init -q -b main repo && cd repo"

TASKS = [
    make_task(
        "git/init-commit", "git", "easy",
        "Turn the directory project/ into a git repository and commit all of its files with the message "
        "'Initial commit'.",
        files={"project/main.py": "print('hi')\n", "project/README.md": "# Project\n",
               "project/lib/util.py": "X = 1\n"},
        solution=["cd project && git init -q && git add -A && git commit -qm 'Initial commit'"],
        tests={
            "one commit with the message": '[ "$(git -C project log --format=%s)" = "Initial commit" ]',
            "all files committed": ('[ "$(git -C project ls-files | wc -l)" = 3 ] '
                                    '&& [ -z "$(git -C project status --porcelain)" ]'),
        },
    ),
    make_task(
        "git/feature-branch", "git", "easy",
        "In repo/, create a branch named feature/login from main and commit on it a new file login.txt "
        "containing the line 'login page'. main must not change.",
        setup=f"{REPO} && echo base > app.txt && git add . && git commit -qm base",
        solution=[("cd repo && git checkout -q -b feature/login && echo 'login page' > login.txt && git add login.txt "
                   "&& git commit -qm 'Add login page'")],
        tests={
            "login.txt committed on the branch": '[ "$(git -C repo show feature/login:login.txt)" = "login page" ]',
            "main unchanged": ('[ "$(git -C repo rev-list --count main)" = 1 ] '
                               '&& ! git -C repo cat-file -e main:login.txt'),
        },
    ),
    make_task(
        "git/discard-changes", "git", "easy",
        "In repo/, throw away the uncommitted changes to settings.ini (restore the committed version). Keep the "
        "untracked file notes.txt as it is.",
        setup=f"{REPO} && printf 'debug=false\\n' > settings.ini && git add . && git commit -qm settings "
              "&& printf 'debug=true\\nsecret=1\\n' > settings.ini && echo 'remember' > notes.txt",
        solution=["git -C repo checkout -- settings.ini"],
        tests={
            "settings.ini restored": 'git -C repo diff --quiet && [ "$(cat repo/settings.ini)" = debug=false ]',
            "notes.txt kept": '[ "$(cat repo/notes.txt)" = remember ]',
        },
    ),
    make_task(
        "git/find-commit", "git", "medium",
        "Somebody added a line containing API_KEY to config.py in repo/. Find the commit that added it and write "
        "its full hash into commit.txt (in /work).",
        setup=f"""{REPO}
echo 'DEBUG = False' > config.py && git add . && git commit -qm 'Add config'
echo 'PORT = 80' >> config.py && git commit -qam 'Set port'
echo 'API_KEY = "abc123"' >> config.py && git commit -qam 'Tweak settings'
echo 'print(1)' > main.py && git add . && git commit -qm 'Add main'
echo 'HOST = "0.0.0.0"' >> config.py && git commit -qam 'Set host'""",
        solution=["git -C repo log --format=%H -S API_KEY -- config.py | tail -n 1 > commit.txt"],
        tests={
            "commit.txt names the commit": '[ "$(tr -d " \\n" < commit.txt)" = "$(git -C repo log --format=%H '
                                           '--grep "Tweak settings")" ]',
        },
    ),
    make_task(
        "git/merge-branch", "git", "medium",
        "In repo/, merge the branch feature into main (main must end up with both branches' changes, and "
        "feature must be part of main's history).",
        setup=f"""{REPO}
echo one > a.txt && git add . && git commit -qm one
git checkout -q -b feature && echo feature > feature.txt && git add . && git commit -qm feature
git checkout -q main && echo main > main.txt && git add . && git commit -qm main""",
        solution=["cd repo && git checkout -q main && git merge -q --no-edit feature"],
        tests={
            "main has both changes": ("git -C repo cat-file -e main:feature.txt "
                                      "&& git -C repo cat-file -e main:main.txt"),
            "feature is merged": "git -C repo merge-base --is-ancestor feature main",
            "on main, clean": ('[ "$(git -C repo branch --show-current)" = main ] '
                               '&& [ -z "$(git -C repo status --porcelain)" ]'),
        },
    ),
    make_task(
        "git/revert-and-tag", "git", "medium",
        "The last commit on main in repo/ broke the build by changing VERSION to 'broken'. Undo it with a new "
        "commit (do not rewrite history), then tag that new commit v1.0.1.",
        setup=f"""{REPO}
echo 1.0.0 > VERSION && git add . && git commit -qm 'Release 1.0.0'
echo 1.0.1 > VERSION && git commit -qam 'Bump to 1.0.1'
echo broken > VERSION && git commit -qam 'Experiment'""",
        solution=["cd repo && git revert --no-edit HEAD && git tag v1.0.1"],
        tests={
            "VERSION restored": '[ "$(git -C repo show HEAD:VERSION)" = 1.0.1 ]',
            "history kept": '[ "$(git -C repo rev-list --count HEAD)" = 4 ]',
            "tag on the new commit": '[ "$(git -C repo rev-parse v1.0.1^{commit})" = "$(git -C repo rev-parse HEAD)" ]',
        },
    ),
    make_task(
        "git/resolve-conflict", "git", "hard",
        "In repo/, merge the branch feature into main. greeting.txt will conflict: resolve it so the file holds "
        "the two lines 'Hello from main' then 'Hello from feature', and complete the merge commit.",
        setup=f"""{REPO}
echo 'Hello' > greeting.txt && git add . && git commit -qm base
git checkout -q -b feature && echo 'Hello from feature' > greeting.txt && git commit -qam feature
git checkout -q main && echo 'Hello from main' > greeting.txt && git commit -qam main""",
        solution=["cd repo && git merge feature",
                  ("printf 'Hello from main\\nHello from feature\\n' > greeting.txt && git add greeting.txt && "
                   "git commit -qm 'Merge feature'")],
        tests={
            "greeting resolved": ('[ "$(git -C repo show HEAD:greeting.txt)" = '
                                  '"$(printf "Hello from main\\nHello from feature")" ]'),
            "merge commit": '[ "$(git -C repo rev-list --parents -n 1 HEAD | wc -w)" = 3 ]',
            "clean tree": '[ -z "$(git -C repo status --porcelain)" ]',
        },
    ),
]
