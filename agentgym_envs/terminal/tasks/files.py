"""File manipulation: creating, renaming, finding, copying, archiving and linking files."""

from ..task import make_task

TASKS = [
    make_task(
        "files/make-tree", "files", "easy",
        "Create the directories project/src, project/tests and project/docs (inside /work) and an empty file "
        "project/README.md.",
        solution=["mkdir -p project/src project/tests project/docs", "touch project/README.md"],
        tests={
            "directories exist": "test -d project/src && test -d project/tests && test -d project/docs",
            "README.md is an empty file": "test -f project/README.md && ! test -s project/README.md",
        },
    ),
    make_task(
        "files/rename-extension", "files", "easy",
        "Rename every .txt file in notes/ to the same name with a .md extension (a.txt becomes a.md). Leave the "
        "other files in notes/ alone.",
        files={"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n", "notes/c.txt": "gamma\n", "notes/keep.md": "keep\n",
               "notes/todo.rst": "todo\n"},
        solution=['for f in notes/*.txt; do mv -- "$f" "${f%.txt}.md"; done'],
        tests={
            "no .txt left": "! ls notes/*.txt 2>/dev/null",
            "renamed files keep their content": ('[ "$(cat notes/a.md notes/b.md notes/c.md)" = '
                                                 '"$(printf "alpha\\nbeta\\ngamma")" ]'),
            "other files untouched": '[ "$(cat notes/keep.md)" = keep ] && [ "$(cat notes/todo.rst)" = todo ]',
        },
    ),
    make_task(
        "files/delete-empty", "files", "easy",
        "Delete every empty regular file under data/ (recursively). Keep all non-empty files and all directories.",
        files={"data/one.csv": "1,2\n", "data/sub/two.csv": "3,4\n", "data/sub/deep/three.csv": "5\n"},
        setup="touch data/empty.log data/sub/empty.txt data/sub/deep/none.dat",
        solution=["find data -type f -empty -delete"],
        tests={
            "no empty files remain": '[ -z "$(find data -type f -empty)" ]',
            "non-empty files kept": ("test -s data/one.csv && test -s data/sub/two.csv "
                                     "&& test -s data/sub/deep/three.csv"),
            "directories kept": "test -d data/sub/deep",
        },
    ),
    make_task(
        "files/largest-file", "files", "medium",
        "Find the largest regular file under files/ and write its path relative to files/ (for example "
        "sub/x.bin) into largest.txt.",
        setup="""
mkdir -p files/a files/b/deep
head -c 1200 /dev/zero > files/a/one.bin
head -c 5000 /dev/zero > files/b/deep/big.dat
head -c 4999 /dev/zero > files/b/almost.dat
head -c 10 /dev/zero > files/top.txt
""",
        solution=["find files -type f -printf '%s %P\\n' | sort -n | tail -n 1 | cut -d' ' -f2- > largest.txt"],
        tests={"largest.txt names the largest file": '[ "$(cat largest.txt)" = b/deep/big.dat ]'},
    ),
    make_task(
        "files/backup-logs", "files", "medium",
        "Copy every .log file under app/ into backup/, keeping the directory structure (app/x/y.log goes to "
        "backup/x/y.log). Do not copy anything that is not a .log file.",
        files={"app/server.log": "s\n", "app/jobs/nightly.log": "n\n", "app/jobs/nightly.conf": "c\n",
               "app/web/access.log": "a\n", "app/web/index.html": "<html>\n"},
        solution=["mkdir -p backup && (cd app && find . -name '*.log' -exec cp --parents {} ../backup/ \\;)"],
        tests={
            "logs copied with structure": "cmp app/server.log backup/server.log && cmp app/jobs/nightly.log "
                                          "backup/jobs/nightly.log && cmp app/web/access.log backup/web/access.log",
            "nothing else copied": '[ -z "$(find backup -type f ! -name "*.log")" ]',
        },
    ),
    make_task(
        "files/archive", "files", "medium",
        "Create a gzip-compressed tarball site.tar.gz of the directory site/ that leaves out every *.tmp file. "
        "Paths inside the archive must start with site/.",
        files={"site/index.html": "<h1>hi</h1>\n", "site/css/main.css": "body{}\n", "site/cache.tmp": "x\n",
               "site/css/old.tmp": "y\n"},
        solution=["tar --exclude='*.tmp' -czf site.tar.gz site"],
        tests={
            "archive lists the site": ("tar -tzf site.tar.gz | grep -qx site/index.html "
                                       "&& tar -tzf site.tar.gz | grep -qx site/css/main.css"),
            "no .tmp files inside": "! tar -tzf site.tar.gz | grep -q '[.]tmp$'",
        },
    ),
    make_task(
        "files/symlink", "files", "easy",
        "Create a relative symbolic link named current (in /work) that points to releases/v2.",
        files={"releases/v1/app.txt": "v1\n", "releases/v2/app.txt": "v2\n"},
        solution=["ln -s releases/v2 current"],
        tests={
            "current is a relative link to releases/v2": 'test -L current && [ "$(readlink current)" = releases/v2 ]',
            "the link resolves": '[ "$(cat current/app.txt)" = v2 ]',
        },
    ),
    make_task(
        "files/count-lines", "files", "easy",
        "Count the total number of lines in all .py files under src/ (recursively) and write just that number "
        "into total.txt.",
        files={"src/a.py": "import os\nprint(1)\n", "src/pkg/b.py": "x = 1\ny = 2\nz = 3\n",
               "src/pkg/deep/c.py": "pass\n", "src/readme.txt": "not python\nat all\n"},
        solution=["find src -name '*.py' -exec cat {} + | wc -l > total.txt"],
        tests={"total.txt holds 6": '[ "$(tr -d " \\n" < total.txt)" = 6 ]'},
    ),
]
