"""Text processing with grep, sed, awk, sort and friends."""

from ..task import make_task

APP_LOG = """\
2024-03-01 10:00:01 INFO  server started
2024-03-01 10:00:05 WARN  disk at 81%
2024-03-01 10:01:12 ERROR database connection lost
2024-03-01 10:01:13 INFO  retrying
2024-03-01 10:01:20 ERROR retry failed: timeout
2024-03-01 10:02:00 INFO  database connection restored
2024-03-01 10:05:42 ERROR request /api/users returned 500
"""

ACCESS_LOG = "".join(
    f"{ip} - - [01/Mar/2024:10:{i:02d}:00] \"GET /{path} HTTP/1.1\" 200 512\n"
    for i, (ip, path) in enumerate([
        ("10.0.0.5", "index"), ("10.0.0.7", "about"), ("10.0.0.5", "api"), ("192.168.1.20", "index"),
        ("10.0.0.7", "api"), ("10.0.0.5", "login"), ("172.16.0.3", "index"), ("10.0.0.5", "api"),
        ("192.168.1.20", "api"), ("10.0.0.7", "index"),
    ])
)

POEM = """\
The river runs, the river bends,
and where the river ends the sea begins.
The sea is wide; the sea is deep; the sea is old;
the river sleeps where the sea will keep.
"""

TASKS = [
    make_task(
        "text/grep-errors", "text", "easy",
        "Write every line of app.log that contains ERROR into errors.txt, keeping their order.",
        files={"app.log": APP_LOG},
        solution=["grep ERROR app.log > errors.txt"],
        tests={
            "errors.txt has exactly the ERROR lines": "diff -q errors.txt - <<'EOF'\n"
            + "".join(line + "\n" for line in APP_LOG.splitlines() if "ERROR" in line) + "EOF",
        },
    ),
    make_task(
        "text/sed-replace", "text", "easy",
        "In every .conf file under conf/, replace the host name old.example.com with new.example.com (edit the "
        "files in place). Do not change other files.",
        files={"conf/web.conf": "upstream old.example.com:8080\nserver_name old.example.com;\n",
               "conf/db.conf": "host=old.example.com\nport=5432\n", "conf/README": "see old.example.com\n"},
        solution=["sed -i 's/old\\.example\\.com/new.example.com/g' conf/*.conf"],
        tests={
            "no old host in .conf files": "! grep -q old.example.com conf/web.conf conf/db.conf",
            "new host everywhere it was": '[ "$(cat conf/*.conf | grep -o new.example.com | wc -l)" = 3 ]',
            "README untouched": 'grep -q old.example.com conf/README',
        },
    ),
    make_task(
        "text/awk-sum", "text", "easy",
        "sales.txt has one sale per line: item, quantity, unit price (separated by spaces). Write the total "
        "revenue (the sum of quantity * price over all lines) into total.txt as a whole number.",
        files={"sales.txt": "apple 3 2\npear 10 4\nmelon 2 15\nplum 7 3\nfig 1 100\n"},
        solution=["awk '{s += $2 * $3} END {print s}' sales.txt > total.txt"],
        tests={"total is 197": '[ "$(tr -d " \\n" < total.txt)" = 197 ]'},
    ),
    make_task(
        "text/top-ip", "text", "medium",
        "Find the client IP address (the first field) that appears most often in access.log and write it into "
        "top_ip.txt.",
        files={"access.log": ACCESS_LOG},
        solution=["awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -n 1 | awk '{print $2}' >top_ip.txt"],
        tests={"top_ip.txt is 10.0.0.5": '[ "$(tr -d " \\n" < top_ip.txt)" = 10.0.0.5 ]'},
    ),
    make_task(
        "text/strip-comments", "text", "medium",
        "Write config.clean: config.ini without its comment lines (lines whose first non-blank character is "
        "# or ;) and without blank lines. Keep the other lines unchanged and in order.",
        files={"config.ini": "# main settings\n[server]\nport = 8080\n\n   ; legacy\nhost = 0.0.0.0  # all\n"
                             "\n[log]\n  # verbose?\nlevel = info\n"},
        solution=["grep -Ev '^[[:space:]]*([#;]|$)' config.ini > config.clean"],
        tests={
            "config.clean is right": "diff -q config.clean - <<'EOF'\n[server]\nport = 8080\nhost = 0.0.0.0  # all\n"
                                     "[log]\nlevel = info\nEOF",
        },
    ),
    make_task(
        "text/word-frequency", "text", "medium",
        "Write the three most frequent words of poem.txt into top3.txt, one per line, most frequent first. "
        "Words are runs of letters; count them case-insensitively and write them in lower case.",
        files={"poem.txt": POEM},
        solution=[("tr -cs 'A-Za-z' '\\n' < poem.txt | tr 'A-Z' 'a-z' | grep -v '^$' | sort | uniq -c | sort -rn "
                   "| head -n 3 | awk '{print $2}' > top3.txt")],
        tests={"top3.txt is the, sea, river": '[ "$(cat top3.txt)" = "$(printf "the\\nsea\\nriver")" ]'},
    ),
    make_task(
        "text/extract-emails", "text", "medium",
        "Extract every distinct email address from contacts.txt into emails.txt: one per line, sorted "
        "alphabetically, no duplicates.",
        files={"contacts.txt": "Alice <alice@example.com>, bob@corp.org\nCall carol.w@mail.example.net or "
                               "alice@example.com\nno address here\ndave+news@corp.org; bob@corp.org\n"},
        solution=["grep -oE '[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]+' contacts.txt | sort -u > emails.txt"],
        tests={
            "emails.txt is right": "diff -q emails.txt - <<'EOF'\nalice@example.com\nbob@corp.org\n"
                                   "carol.w@mail.example.net\ndave+news@corp.org\nEOF",
        },
    ),
]
