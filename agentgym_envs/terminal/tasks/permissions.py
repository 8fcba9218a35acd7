"""File permissions: execute bits, private files, recursive modes, world-writable files, special bits."""

from ..task import make_task

TASKS = [
    make_task(
        "permissions/make-executable", "permissions", "easy",
        "Make deploy.sh executable by its owner, then run it once (it writes deployed.txt).",
        files={"deploy.sh": "#!/bin/bash\necho deployed > deployed.txt\n"},
        setup="chmod 644 deploy.sh",
        solution=["chmod u+x deploy.sh", "./deploy.sh"],
        tests={"deploy.sh is executable": "test -x deploy.sh", "it ran": '[ "$(cat deployed.txt)" = deployed ]'},
    ),
    make_task(
        "permissions/private-key", "permissions", "easy",
        "Set the permissions of secret.key so that only its owner can read and write it, and nobody can "
        "execute it (mode 600).",
        files={"secret.key": "-----BEGIN KEY-----\n"},
        setup="chmod 664 secret.key",
        solution=["chmod 600 secret.key"],
        tests={"mode is 600": '[ "$(stat -c %a secret.key)" = 600 ]'},
    ),
    make_task(
        "permissions/tree-modes", "permissions", "medium",
        "Under shared/ (including shared/ itself), set every directory to mode 750 and every regular file to "
        "mode 640.",
        files={"shared/a.txt": "a\n", "shared/docs/b.md": "b\n", "shared/docs/img/c.png": "c\n"},
        setup="chmod 777 shared shared/docs && chmod 700 shared/docs/img && chmod 666 shared/a.txt "
              "&& chmod 755 shared/docs/b.md",
        solution=["find shared -type d -exec chmod 750 {} +", "find shared -type f -exec chmod 640 {} +"],
        tests={
            "directories are 750": '[ -z "$(find shared -type d ! -perm 750)" ]',
            "files are 640": '[ -z "$(find shared -type f ! -perm 640)" ]',
        },
    ),
    make_task(
        "permissions/world-writable", "permissions", "medium",
        "Some files under www/ are writable by everyone. Write their paths (like www/a.txt) into ww.txt, sorted, "
        "one per line; then remove the write permission for others from those files (change nothing else).",
        files={"www/index.html": "i\n", "www/upload.php": "u\n", "www/static/app.js": "a\n",
               "www/static/site.css": "s\n"},
        setup="chmod 644 www/index.html www/static/site.css && chmod 666 www/upload.php && chmod 777 www/static/app.js",
        solution=["find www -type f -perm -o+w | sort > ww.txt", "chmod o-w $(cat ww.txt)"],
        tests={
            "ww.txt lists them": "diff -q ww.txt - <<'EOF'\nwww/static/app.js\nwww/upload.php\nEOF",
            "no world-writable files": '[ -z "$(find www -type f -perm -o+w)" ]',
            "other bits kept": '[ "$(stat -c %a www/static/app.js www/upload.php | tr "\\n" " ")" = "775 664 " ]',
        },
    ),
    make_task(
        "permissions/setgid-dir", "permissions", "medium",
        "Create a directory uploads/ whose owner and group have full access, others have none, and files "
        "created inside inherit the directory's group (mode 2770).",
        solution=["mkdir uploads && chmod 2770 uploads"],
        tests={"uploads has mode 2770": 'test -d uploads && [ "$(stat -c %a uploads)" = 2770 ]'},
    ),
]
