"""CSV and JSON wrangling with awk, jq and Python one-liners."""

from ..task import make_task

PEOPLE = "name,age,city\nana,34,Lisbon\nben,29,Oslo\ncai,41,Lima\ndee,30,Rome\neli,52,Kyiv\n"
USERS = ('[{"name": "ana", "active": true}, {"name": "ben", "active": false}, {"name": "cai", "active": true}, '
         '{"name": "dee", "active": false}, {"name": "eli", "active": true}]\n')
PRODUCTS = "id,name,price\n1,pen,1.5\n2,notebook,4.25\n3,bag,30\n"
SALES = "region,amount\nnorth,10\nsouth,5\neast,7\nnorth,3\nsouth,20\nwest,1\neast,2\n"
EVENTS = ('[{"type": "info"}, {"type": "error", "code": 1}, {"type": "warning"}, {"type": "error", "code": 2}, '
          '{"type": "info"}, {"type": "error", "code": 3}, {"type": "errors"}]\n')
DEFAULTS = '{"name": "app", "debug": false, "db": {"host": "localhost", "port": 5432}, "tags": ["a"]}\n'
OVERRIDES = '{"debug": true, "db": {"port": 6543, "user": "admin"}, "tags": ["b", "c"]}\n'
CSV_TO_JSON = ("python3 -c 'import csv, json; rows = list(csv.DictReader(open(\"products.csv\"))); "
               "json.dump([{\"id\": int(r[\"id\"]), \"name\": r[\"name\"], \"price\": float(r[\"price\"])} "
               "for r in rows], open(\"products.json\", \"w\"))'")

TASKS = [
    make_task(
        "data/csv-filter", "data", "easy",
        "Write adults.csv: the header of people.csv and only the rows whose age is over 30, in their original order.",
        files={"people.csv": PEOPLE},
        solution=["awk -F, 'NR == 1 || $2 > 30' people.csv > adults.csv"],
        tests={"adults.csv is right": ("diff -q adults.csv - <<'EOF'\n"
                                       "name,age,city\nana,34,Lisbon\ncai,41,Lima\neli,52,Kyiv\nEOF")},
    ),
    make_task(
        "data/json-active-users", "data", "easy",
        "users.json is a list of users. Write the names of the active ones into active.txt, one per line, in "
        "file order.",
        files={"users.json": USERS},
        solution=["jq -r '.[] | select(.active) | .name' users.json > active.txt"],
        tests={"active.txt is right": '[ "$(cat active.txt)" = "$(printf "ana\\ncai\\neli")" ]'},
    ),
    make_task(
        "data/csv-to-json", "data", "medium",
        "Convert products.csv into products.json: a JSON array of objects with the keys id (a number), name (a "
        "string) and price (a number), in the CSV's order.",
        files={"products.csv": PRODUCTS},
        solution=[CSV_TO_JSON],
        tests={
            "products.json is right": ("python3 -I -c 'import json; assert json.load(open(\"products.json\")) == "
                                       "[{\"id\": 1, \"name\": \"pen\", \"price\": 1.5}, "
                                       "{\"id\": 2, \"name\": \"notebook\", \"price\": 4.25}, "
                                       "{\"id\": 3, \"name\": \"bag\", \"price\": 30}]'"),
        },
    ),
    make_task(
        "data/group-sum", "data", "medium",
        "Write summary.csv from sales.csv: the header region,total and then one row per region with the sum of "
        "its amounts, sorted by region name.",
        files={"sales.csv": SALES},
        solution=[("(echo region,total; tail -n +2 sales.csv "
                   "| awk -F, '{s[$1] += $2} END {for (r in s) print r \",\" s[r]}' | sort) > summary.csv")],
        tests={"summary.csv is right": ("diff -q summary.csv - <<'EOF'\n"
                                        "region,total\neast,9\nnorth,13\nsouth,25\nwest,1\nEOF")},
    ),
    make_task(
        "data/json-merge", "data", "medium",
        "Write config.json: defaults.json with overrides.json applied on top. A key in overrides replaces the "
        "default, except that nested objects are merged key by key (recursively); lists are replaced.",
        files={"defaults.json": DEFAULTS, "overrides.json": OVERRIDES},
        solution=["jq -s '.[0] * .[1]' defaults.json overrides.json > config.json"],
        tests={
            "config.json is right": ("python3 -I -c 'import json; assert json.load(open(\"config.json\")) == "
                                     "{\"name\": \"app\", \"debug\": True, "
                                     "\"db\": {\"host\": \"localhost\", \"port\": 6543, \"user\": \"admin\"}, "
                                     "\"tags\": [\"b\", \"c\"]}'"),
        },
    ),
    make_task(
        "data/json-count", "data", "easy",
        "Count the events in events.json whose type is exactly \"error\" and write the number into count.txt.",
        files={"events.json": EVENTS},
        solution=["jq '[.[] | select(.type == \"error\")] | length' events.json > count.txt"],
        tests={"count.txt holds 3": '[ "$(tr -d " \\n" < count.txt)" = 3 ]'},
    ),
]
